//! The runs the server offers: every session, and the sessions of one capture written by several
//! hosts (each host its own session folder, as `jax.profiler` writes on every worker) offered
//! together as one run, named `A + B`, ahead of its members.
//!
//! Sessions are matched as `xlens report` matches them
//! ([`xlens_analysis::base::summary::group_windows`]): their profile windows on the hosts' wall
//! clocks overlap and they share no host name. Finding the windows means reading the profiles,
//! so only sessions that could match are read: sessions modified within
//! [`SAME_CAPTURE_S`] of each other, of which two share no host name. One host capturing
//! again and again (the common case) is never read for this. The answer is kept until the
//! sessions change.

use std::collections::HashSet;

use xlens_analysis::base::summary::{group_windows, HostWindow};
use xlens_store::Session;

use crate::cache::ProfileCache;

/// Sessions modified within this many seconds of one another may be one capture.
pub const SAME_CAPTURE_S: u64 = 600;

/// Sessions offered as one run.
#[derive(Debug, Clone)]
pub struct Grouped {
    /// The run: every member's hosts, named after its members (`A + B`).
    pub session: Session,
    pub members: Vec<String>,
    /// How they were matched.
    pub matched: String,
}

/// Runs of sessions modified within [`SAME_CAPTURE_S`] of the next (newest first, as listed),
/// holding two sessions that share no host name: only these can be one capture.
fn candidates(sessions: &[Session]) -> Vec<Vec<&Session>> {
    let mut by_time: Vec<&Session> = sessions.iter().collect();
    by_time.sort_by_key(|s| s.modified_s);
    let mut clusters: Vec<Vec<&Session>> = Vec::new();
    for s in by_time {
        match clusters.last_mut() {
            Some(c)
                if c.last()
                    .is_some_and(|l| s.modified_s - l.modified_s <= SAME_CAPTURE_S) =>
            {
                c.push(s)
            }
            _ => clusters.push(vec![s]),
        }
    }
    fn hosts(s: &Session) -> HashSet<&str> {
        s.hosts.iter().map(|h| h.host.as_str()).collect()
    }
    clusters.retain(|c| {
        c.iter().enumerate().any(|(i, a)| {
            let ha = hosts(a);
            c[i + 1..].iter().any(|b| hosts(b).is_disjoint(&ha))
        })
    });
    clusters
}

/// The host files of the candidates.
pub fn candidate_files(sessions: &[Session]) -> Vec<xlens_store::HostFile> {
    candidates(sessions)
        .into_iter()
        .flatten()
        .flat_map(|s| s.hosts.iter().cloned())
        .collect()
}

/// What identifies the candidates: their names, times and files.
pub fn candidates_key(sessions: &[Session]) -> String {
    let mut key = String::new();
    for c in candidates(sessions) {
        for s in c {
            key.push_str(&format!("{}\u{0}{}", s.name, s.modified_s));
            for h in &s.hosts {
                key.push_str(&format!("\u{0}{}:{}", h.path.display(), h.bytes));
            }
            key.push('\u{1}');
        }
        key.push('\u{2}');
    }
    key
}

/// The groups of `sessions` (reads the candidates' profiles through `cache`).
pub fn groups(cache: &ProfileCache, sessions: &[Session]) -> Vec<Grouped> {
    let mut out = Vec::new();
    for cluster in candidates(sessions) {
        let run = cache.run(cluster.iter().map(|s| (*s).clone()).collect());
        let windows = run.hosts.iter().filter_map(|h| {
            let p = h.analysis.as_ref().ok()?.profile();
            Some(HostWindow {
                session: &h.session,
                host: h.host(),
                origin_ps: p.origin_is_wall_clock.then_some(p.origin_ps),
                span_ps: p.span(),
            })
        });
        for g in group_windows(windows)
            .into_iter()
            .filter(|g| g.sessions.len() > 1)
        {
            let members: Vec<&Session> = g
                .sessions
                .iter()
                .filter_map(|n| cluster.iter().find(|s| &s.name == n).copied())
                .collect();
            let Some(first) = members.first() else {
                continue;
            };
            let session = Session {
                name: g.sessions.join(" + "),
                dir: first
                    .dir
                    .parent()
                    .map(|p| p.to_path_buf())
                    .unwrap_or_default(),
                hosts: members.iter().flat_map(|s| s.hosts.clone()).collect(),
                modified_s: members.iter().map(|s| s.modified_s).max().unwrap_or(0),
            };
            out.push(Grouped {
                session,
                members: g.sessions,
                matched: g.matched,
            });
        }
    }
    out
}

/// `sessions` with each group inserted before its newest member.
pub fn with_groups(sessions: Vec<Session>, groups: &[Grouped]) -> Vec<Session> {
    let mut out = Vec::with_capacity(sessions.len() + groups.len());
    let mut placed = vec![false; groups.len()];
    for s in sessions {
        for (i, g) in groups.iter().enumerate() {
            if !placed[i] && g.members.contains(&s.name) {
                placed[i] = true;
                out.push(g.session.clone());
            }
        }
        out.push(s);
    }
    out
}
