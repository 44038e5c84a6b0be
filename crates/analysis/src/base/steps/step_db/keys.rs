//! The stats the grouping reads (a table from interned key to slot), an event's context and flow
//! ids, and the constants of XProf's grouping.

use super::*;

pub(super) const STEPS_LINE_ID: i64 = -559038737; // 0xdeadbeef as i32: XProf's derived "Steps" line.
pub(super) const DERIVED_MAX: i64 = STEPS_LINE_ID + 64;
pub(super) const DROP_THRESHOLD: usize = 5;
pub(super) const NONE: u32 = u32::MAX;
pub(super) const IMPLICIT_ROOTS: [&str; 4] = [
    "FunctionRun",
    "SessionRun",
    "RunGraph",
    "ExecutorState::Process",
];
pub(super) const LOOP_OPS: [&str; 5] = [
    "WhileOp-EvalCond",
    "WhileOp-StartBody",
    "ForOp",
    "ParallelForOp",
    "ForeverOp",
];
pub(super) const TF_DATA_FUNCS: [&str; 4] = [
    "InstantiatedCapturedFunction::Run",
    "InstantiatedCapturedFunction::RunWithBorrowedArgs",
    "InstantiatedCapturedFunction::RunInstantiated",
    "InstantiatedCapturedFunction::RunAsync",
];

// What a stat key means to grouping (`Keys::slots`); 0: nothing.
pub(super) const S_R: u8 = 1;
pub(super) const S_A: u8 = 2;
pub(super) const S_CORR: u8 = 3;
pub(super) const S_ID: u8 = 4;
pub(super) const S_ITER: u8 = 5;
pub(super) const S_STEP: u8 = 6;
pub(super) const S_GRAPH: u8 = 7;
pub(super) const S_GROUP: u8 = 8;
pub(super) const S_STEP_NAME: u8 = 9;
pub(super) const S_IPL: u8 = 10;
pub(super) const S_SHAPE: u8 = 11;
/// Slots from here on are flow ids, kept out of [`Ctx`] (most events of a JAX or TF profile have
/// them, few have anything else).
pub(super) const S_FLOW: u8 = 12;
pub(super) const S_P: u8 = 12;
pub(super) const S_PT: u8 = 13;
pub(super) const S_C: u8 = 14;
pub(super) const S_CT: u8 = 15;
pub(super) const S_PID: u8 = 16;

/// Stat keys the grouping reads, as a table from interned key to slot (one load per stat).
pub(super) struct Keys {
    pub(super) slots: Vec<u8>,
    /// The keys grouping reads other than flow types and ids (rare ones, and `_pid`).
    pub(super) others: Vec<StrId>,
    pub(super) group_id: Option<StrId>,
    pub(super) process_id: Option<StrId>,
}

impl Keys {
    pub(super) fn new(p: &Profile) -> Keys {
        let slots = crate::base::ops::events::stat_slots(
            p,
            &[
                ("_r", S_R),
                ("_a", S_A),
                ("correlation_id", S_CORR),
                ("id", S_ID),
                ("iter_num", S_ITER),
                ("step_num", S_STEP),
                ("graph_type", S_GRAPH),
                ("group_id", S_GROUP),
                ("step_name", S_STEP_NAME),
                ("_ipl_stage_name", S_IPL),
                ("shape", S_SHAPE),
                ("_p", S_P),
                ("_pt", S_PT),
                ("_c", S_C),
                ("_ct", S_CT),
                ("_pid", S_PID),
            ],
        );
        let others = (0..slots.len())
            .filter(|&k| matches!(slots[k], 1..S_FLOW | S_PID))
            .map(|k| StrId(k as u32))
            .collect();
        Keys {
            slots,
            others,
            group_id: p.key("group_id"),
            process_id: p.key("process_id"),
        }
    }
    #[inline(always)]
    pub(super) fn slot(&self, key: StrId) -> u8 {
        self.slots.get(key.0 as usize).copied().unwrap_or(0)
    }
}

/// The stats (other than flow ids) of one event that grouping and classification read: metadata
/// stats, overridden by the event's own. Kept only for the events that have any.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Ctx {
    pub(super) r: Option<i64>,
    pub(super) a: bool,
    pub(super) corr: Option<u64>,
    pub(super) id: Option<u64>,
    pub(super) iter_num: Option<i64>,
    pub(super) step_num: Option<i64>,
    pub(super) graph_type: Option<StatValue>,
    pub(super) group_id: Option<i64>,
    pub(super) step_name: Option<StrId>,
    pub(super) ipl_stage: bool,
    pub(super) shape: Option<StrId>,
    pub(super) any: bool,
}

impl Ctx {
    pub(super) const EMPTY: Ctx = Ctx {
        r: None,
        a: false,
        corr: None,
        id: None,
        iter_num: None,
        step_num: None,
        graph_type: None,
        group_id: None,
        step_name: None,
        ipl_stage: false,
        shape: None,
        any: false,
    };
}

/// Flow ids of one event (`_p`/`_pt`/`_c`/`_ct`/`_pid`); bit `slot - S_FLOW` of `set` says
/// which are present.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Flow {
    pub(super) v: [u64; 5],
    pub(super) set: u8,
}

impl Flow {
    #[inline(always)]
    pub(super) fn put(&mut self, slot: u8, v: Option<u64>) {
        let b = slot - S_FLOW;
        match v {
            Some(x) => {
                self.v[b as usize] = x;
                self.set |= 1 << b;
            }
            None => self.set &= !(1 << b),
        }
    }
    #[inline(always)]
    pub(super) fn get(&self, slot: u8) -> Option<u64> {
        let b = slot - S_FLOW;
        (self.set & (1 << b) != 0).then(|| self.v[b as usize])
    }
}

/// Reads the flow ids of `stats` into `f`; returns whether any other stat grouping reads is there.
#[inline(always)]
pub(super) fn scan_stats(k: &Keys, stats: xlens_model::Stats<'_>, f: &mut Flow) -> bool {
    let mut rare = false;
    stats.select(
        |key| match k.slot(key) {
            0 => None,
            slot if slot >= S_FLOW => Some(slot),
            _ => {
                rare = true;
                None
            }
        },
        |slot, v| f.put(slot, v.as_id_bits()),
    );
    rare
}

/// Reads the non-flow stats grouping needs into `c` (overriding what is there).
pub(super) fn read_ctx(k: &Keys, stats: xlens_model::Stats<'_>, c: &mut Ctx) {
    stats.select(
        |key| Some(k.slot(key)).filter(|&s| s != 0 && s < S_FLOW),
        |slot, v| {
            c.any = true;
            match slot {
                S_R => c.r = v.as_i64(),
                S_A => c.a = v.as_i64().unwrap_or(0) != 0,
                S_CORR => c.corr = v.as_id_bits(),
                S_ID => c.id = v.as_id_bits(),
                S_ITER => c.iter_num = v.as_i64(),
                S_STEP => c.step_num = v.as_i64(),
                S_GRAPH => c.graph_type = Some(v),
                S_GROUP => c.group_id = v.as_i64(),
                S_STEP_NAME => c.step_name = v.as_str_id(),
                S_IPL => c.ipl_stage = v.as_str_id().is_some(),
                _ => c.shape = v.as_str_id(),
            }
        },
    );
}
