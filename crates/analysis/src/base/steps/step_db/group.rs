//! XProf's `GroupTfEvents`: events grouped under their roots through nesting and links.

use super::*;

/// Events linked to their parents by something other than nesting: children by parent (CSR over
/// the events that have any) and the links sorted by child (for the few ancestor walks).
pub(super) struct Links {
    /// Bit `g` is set when event `g` has children.
    pub(super) has: Vec<u64>,
    /// Events with children before each word of `has`.
    pub(super) rank: Vec<u32>,
    /// `children[child_off[k]..child_off[k + 1]]` are the children of the `k`-th event that has
    /// any. (An offset per event of the profile took 19 MB on a JAX CPU profile of 207 MB and
    /// 4.8 million events, a third of which have children.)
    pub(super) child_off: Vec<u32>,
    pub(super) children: Vec<u32>,
    pub(super) by_child: Vec<(u32, u32)>,
}

impl Links {
    pub(super) fn new(n: usize, mut links: Vec<(u32, u32)>) -> Links {
        let mut has = vec![0u64; n.div_ceil(64)];
        for &(a, _) in &links {
            has[a as usize / 64] |= 1 << (a % 64);
        }
        let mut rank = Vec::with_capacity(has.len());
        let mut parents = 0u32;
        for w in &has {
            rank.push(parents);
            parents += w.count_ones();
        }
        let mut links_of = Links {
            has,
            rank,
            child_off: Vec::new(),
            children: Vec::new(),
            by_child: Vec::new(),
        };
        let mut off = vec![0u32; parents as usize + 2];
        for &(a, _) in &links {
            off[links_of.parent_index(a) + 2] += 1;
        }
        for i in 2..off.len() {
            off[i] += off[i - 1];
        }
        let mut children = vec![0u32; links.len()];
        for &(a, b) in &links {
            let slot = &mut off[links_of.parent_index(a) + 1];
            children[*slot as usize] = b;
            *slot += 1;
        }
        off.pop();
        // Stable: a child's parents stay in link order. Flow links arrive in child order already,
        // and then no sort (its buffer is half the links) is needed.
        if !links.is_sorted_by_key(|l| l.1) {
            links.sort_by_key(|l| l.1);
        }
        links.shrink_to_fit();
        links_of.child_off = off;
        links_of.children = children;
        links_of.by_child = links;
        links_of
    }

    /// The index among the events with children of `g`, which has some.
    #[inline]
    pub(super) fn parent_index(&self, g: u32) -> usize {
        let (w, b) = (g as usize / 64, g % 64);
        let below = self.has[w] & ((1u64 << b) - 1);
        self.rank[w] as usize + below.count_ones() as usize
    }

    pub(super) fn children(&self, g: u32) -> &[u32] {
        match self.has.get(g as usize / 64) {
            Some(w) if w >> (g % 64) & 1 == 1 => {
                let k = self.parent_index(g);
                &self.children[self.child_off[k] as usize..self.child_off[k + 1] as usize]
            }
            _ => &[],
        }
    }
    pub(super) fn parents(&self, g: u32) -> impl Iterator<Item = u32> + '_ {
        let from = self.by_child.partition_point(|l| l.1 < g);
        self.by_child[from..]
            .iter()
            .take_while(move |l| l.1 == g)
            .map(|l| l.0)
    }
}

/// Groups events the way XProf's `GroupTfEvents` does; returns the step name XProf writes on each
/// (non-implicit) root event, by event, and the number of groups.
pub(super) fn group_events(flat: &mut Flat<'_>) -> (HashMap<u32, String>, usize) {
    let p = flat.p;
    let mut names = HashMap::default();
    // CheckLoopOp: any loop op in the metadata disables grouping.
    for plane in &p.planes {
        if plane
            .event_metadata
            .iter()
            .any(|m| LOOP_OPS.contains(&p.str(m.name)))
        {
            flat.ungroup();
            return (names, 0);
        }
    }
    // Links (parent -> child) other than nesting.
    let mut links: Vec<(u32, u32)> = Vec::new();
    let mut launches: HashMap<u64, u32> = HashMap::default();
    let mut executes: Vec<(u64, u32)> = Vec::new();
    let mut executors: HashMap<(u64, i64), u32> = HashMap::default();
    let mut get_next: Vec<((u64, i64), u32)> = Vec::new();
    let mut tf_data_ids: Vec<u64> = Vec::new();
    let mut loop_events: Vec<(u64, i64, u32)> = Vec::new();
    // (level, start, event); sorted by level (higher first), start, then event order.
    let mut roots: Vec<(i64, i64, u32)> = Vec::new();
    for &(g, ref c) in &flat.ctxs {
        let (pl, li, i) = flat.locate(g);
        let plane = &p.planes[pl];
        let line = &plane.lines[li];
        let is_host = p.str(plane.name) == "/host:CPU";
        let name = plane
            .metadata_of(line, i)
            .map(|m| p.str(m.name))
            .unwrap_or("");
        if let Some(cid) = c.corr {
            if !IMPLICIT_ROOTS.contains(&name) {
                if is_host {
                    launches.insert(cid, g);
                } else {
                    executes.push((cid, g));
                }
            }
        }
        if let (Some(id), Some(it)) = (c.id, c.iter_num) {
            if name == "ExecutorState::Process" {
                executors.insert((id, it), g);
                loop_events.push((id, it, g));
            } else if name == "IteratorGetNextOp::DoCompute"
                || name == "IteratorGetNextAsOptionalOp::DoCompute"
            {
                get_next.push(((id, it), g));
            }
        }
        if let Some(id) = c.id {
            if TF_DATA_FUNCS.contains(&name) {
                tf_data_ids.push(id);
            }
        }
        if let Some(r) = c.r {
            roots.push((r, line.events.start(i), g));
        }
    }
    // `TraceContext` events without an `_r` level are roots of level 1.
    for &(pi, lj, base) in &flat.lines {
        let plane = &p.planes[pi];
        let Some(tc) = plane
            .event_metadata
            .iter()
            .position(|m| p.str(m.name) == "TraceContext")
        else {
            continue;
        };
        let ev = &plane.lines[lj].events;
        for (i, &m) in ev.metadata_indices().iter().enumerate() {
            let g = base + i as u32;
            if m as usize == tc && flat.ctx(g).r.is_none() {
                roots.push((1, ev.start(i), g));
            }
        }
    }
    for (cid, g) in executes {
        if let Some(&l) = launches.get(&cid) {
            links.push((l, g));
        }
    }
    for (key, g) in get_next {
        if let Some(&e) = executors.get(&key) {
            links.push((e, g));
        }
    }
    // Flows link mostly one producer to each consumer.
    links.reserve(flat.flows.consumer_count());
    join_flows(&flat.flows.prods, flat.flows.consumers(), &mut links);
    flat.ungroup();
    tf_data_ids.sort_unstable();
    let is_tf_data = |c: &Ctx| {
        c.id.is_some_and(|id| tf_data_ids.binary_search(&id).is_ok())
    };
    // TF while-loops: each iteration's first executor event is a root.
    let mut loops: HashMap<u64, HashMap<i64, Vec<u32>>> = HashMap::default();
    for &(id, it, g) in &loop_events {
        if tf_data_ids.binary_search(&id).is_ok() {
            continue;
        }
        loops.entry(id).or_default().entry(it).or_default().push(g);
    }
    let mut loop_roots: Vec<(i64, u32)> = Vec::new();
    for iters in loops.values() {
        if iters.len() == 1 && iters.contains_key(&0) {
            continue;
        }
        for evs in iters.values() {
            let Some(&first) = evs.iter().min_by_key(|g| flat.start(**g)) else {
                continue;
            };
            loop_roots.push((flat.start(first), first));
            for &e in evs {
                if e != first {
                    links.push((first, e));
                }
            }
        }
    }
    let links = Links::new(flat.n, links);
    let parents_of = |flat: &Flat<'_>, g: u32, out: &mut Vec<u32>| {
        out.clear();
        let np = flat.nest_parent[g as usize];
        if np != NONE {
            out.push(np);
        }
        out.extend(links.parents(g));
    };
    // Breadth-first search over ancestors for the first event with a stat.
    let ancestor_ctx = |flat: &Flat<'_>, g: u32, f: &dyn Fn(&Ctx) -> bool| -> Option<Ctx> {
        let mut seen = HashSet::default();
        let mut q = VecDeque::from([g]);
        seen.insert(g);
        let mut ps = Vec::new();
        while let Some(x) = q.pop_front() {
            let c = flat.ctx(x);
            if f(c) {
                return Some(*c);
            }
            parents_of(flat, x, &mut ps);
            for &pp in &ps {
                if seen.insert(pp) {
                    q.push_back(pp);
                }
            }
        }
        None
    };
    let mut order: Vec<u32> = Vec::new();
    let mut walk = Walk { todo: Vec::new() };
    if !loop_roots.is_empty() {
        loop_roots.sort_by_key(|x| x.0);
        order = loop_roots.iter().map(|x| x.1).collect();
        for (gid, &g) in order.iter().enumerate() {
            walk.assign(flat, &links, g, gid as u32);
        }
    } else {
        roots.retain(|&(_, _, g)| !is_tf_data(flat.ctx(g)));
        roots.sort_unstable_by_key(|&(lvl, t, g)| (std::cmp::Reverse(lvl), t, g));
        let mut ps = Vec::new();
        for &(lvl, _, g) in &roots {
            if flat.group[g as usize] != NONE {
                continue;
            }
            // Not grouped when an ancestor is a root of the same level.
            let mut blocked = false;
            let mut seen = HashSet::default();
            parents_of(flat, g, &mut ps);
            let mut q: VecDeque<u32> = ps.iter().copied().collect();
            seen.extend(ps.iter().copied());
            while let Some(x) = q.pop_front() {
                let c = flat.ctx(x);
                let xl =
                    c.r.or_else(|| (flat.name(x) == "TraceContext").then_some(1));
                if xl == Some(lvl) {
                    blocked = true;
                    break;
                }
                parents_of(flat, x, &mut ps);
                for &pp in &ps {
                    if seen.insert(pp) {
                        q.push_back(pp);
                    }
                }
            }
            if blocked {
                continue;
            }
            order.push(g);
            walk.assign(flat, &links, g, order.len() as u32 - 1);
        }
    }
    flat.group_ids = (0..order.len() as i64).collect();
    for (gid, &g) in order.iter().enumerate() {
        let gt = ancestor_ctx(flat, g, &|c| c.graph_type.is_some()).and_then(|c| c.graph_type);
        let name = flat.name(g);
        let implicit = IMPLICIT_ROOTS.contains(&name);
        let mut s = match gt {
            Some(v) => format!("{} ", v.display(&p.strings)),
            None if !implicit => format!("{name} "),
            None => String::new(),
        };
        let num = ancestor_ctx(flat, g, &|c| c.iter_num.is_some())
            .and_then(|c| c.iter_num)
            .or_else(|| ancestor_ctx(flat, g, &|c| c.step_num.is_some()).and_then(|c| c.step_num))
            .unwrap_or(gid as i64);
        s.push_str(&num.to_string());
        if !implicit {
            names.insert(g, s);
        }
    }
    (names, order.len())
}

/// Group assignment: from a root, every event reachable through not-yet-grouped events (nested
/// children on its line and linked children). The reachable set does not depend on the visiting
/// order, so a depth-first walk gives XProf's breadth-first result. An event reached twice is
/// skipped the second time (it is grouped by then).
pub(super) struct Walk {
    pub(super) todo: Vec<u32>,
}

impl Walk {
    pub(super) fn assign(&mut self, flat: &mut Flat<'_>, links: &Links, root: u32, gid: u32) {
        self.todo.clear();
        self.todo.push(root);
        while let Some(x) = self.todo.pop() {
            if flat.group[x as usize] != NONE {
                continue;
            }
            flat.group[x as usize] = gid;
            // Nested children: the events up to `x`'s last descendant whose parent is `x`; a
            // child's own descendants are skipped over.
            let last = flat.last_desc[x as usize];
            let mut c = x + 1;
            while c <= last {
                if flat.nest_parent[c as usize] == x {
                    if flat.group[c as usize] == NONE {
                        self.todo.push(c);
                    }
                    c = flat.last_desc[c as usize] + 1;
                } else {
                    c += 1;
                }
            }
            for &c in links.children(x) {
                if flat.group[c as usize] == NONE {
                    self.todo.push(c);
                }
            }
        }
    }
}
