//! The buffers of a module's buffer assignment, indexed by logical buffer id: each one's
//! allocation, size and defining instruction.

use super::*;

/// A logical buffer that sits in an allocation and whose defining instruction is known.
pub(super) struct Buf<'a> {
    pub(super) id: i64,
    pub(super) size: i64,
    pub(super) unpadded: i64,
    pub(super) color: i64,
    /// Position in `buffer_allocations`.
    pub(super) alloc: usize,
    pub(super) instr: &'a HloInstructionProto,
    pub(super) shape_index: &'a [i64],
}

pub(super) struct Buffers<'a> {
    pub(super) list: Vec<Buf<'a>>,
    pub(super) by_id: HashMap<i64, usize>,
}

pub(super) fn index_buffers<'a>(
    m: &'a HloModule,
    ba: &'a BufferAssignmentProto,
    warnings: &mut Vec<String>,
) -> Buffers<'a> {
    let lb_by_id: HashMap<i64, usize> = ba
        .logical_buffers
        .iter()
        .enumerate()
        .map(|(i, b)| (b.id, i))
        .collect();
    let mut list = Vec::new();
    let mut by_id = HashMap::new();
    let (mut missing_lb, mut missing_instr) = (0usize, 0usize);
    for (ai, alloc) in ba.buffer_allocations.iter().enumerate() {
        for a in &alloc.assigned {
            let Some(lb) = lb_by_id
                .get(&a.logical_buffer_id)
                .map(|&i| &ba.logical_buffers[i])
            else {
                missing_lb += 1;
                continue;
            };
            let at = lb.defined_at.as_ref();
            let instr = at
                .and_then(|d| m.instruction(d.instruction_id))
                // Older writers name the instruction instead (XProf would drop the buffer).
                .or_else(|| {
                    at.filter(|d| !d.instruction_name.is_empty())
                        .and_then(|d| m.instruction_by_name(&d.instruction_name))
                });
            let Some(instr) = instr else {
                missing_instr += 1;
                continue;
            };
            let shape_index: &[i64] = at.map(|d| d.shape_index.as_slice()).unwrap_or(&[]);
            let unpadded = instr
                .shape
                .as_ref()
                .map(|s| shape_unpadded_bytes(buffer_subshape(s, shape_index)))
                .unwrap_or(0);
            by_id.insert(lb.id, list.len());
            list.push(Buf {
                id: lb.id,
                size: lb.size,
                unpadded,
                color: lb.color,
                alloc: ai,
                instr,
                shape_index,
            });
        }
    }
    if missing_lb > 0 {
        warnings.push(format!(
            "{missing_lb} assigned logical buffer(s) are not in the buffer assignment's list; ignored"
        ));
    }
    if missing_instr > 0 {
        warnings.push(format!(
            "{missing_instr} logical buffer(s) are defined by unknown instructions; ignored"
        ));
    }
    Buffers { list, by_id }
}
