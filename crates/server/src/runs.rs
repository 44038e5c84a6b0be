//! The runs the server offers: every session, and the sessions of one capture written by several
//! hosts (each host its own session folder, as `jax.profiler` writes on every worker) offered
//! together as one run, named `A + B`, ahead of its members.
//!
//! Sessions are matched as `xlens report` matches them
//! ([`xlens_analysis::base::hosts::summary::group_windows`]): their profile windows on the hosts' wall
//! clocks overlap and they share no host name. Finding the windows means reading the profiles,
//! so only sessions that could match are read: sessions named by their capture time as the
//! profilers name them (`YYYY_MM_DD_HH_MM_SS`, UTC) within [`SAME_CAPTURE_S`] of each other, of
//! which two share no host name. One host capturing again and again (the common case), and
//! folders named otherwise (whose files' times say nothing of the capture once copied), are never
//! read for this. The answer is kept until the sessions change.

use std::collections::HashSet;

use xlens_analysis::base::hosts::summary::{group_windows, HostWindow};
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

/// Seconds since the Unix epoch of a session named by its capture time
/// (`YYYY_MM_DD_HH_MM_SS`, UTC, as [`xlens_store::session_id_at`] writes it); `None` for other
/// names.
pub fn capture_time(name: &str) -> Option<i64> {
    let f: Vec<i64> = name
        .split('_')
        .enumerate()
        .map(|(i, p)| {
            let digits = if i == 0 { 4 } else { 2 };
            (p.len() == digits && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse().ok())
                .flatten()
        })
        .collect::<Option<Vec<i64>>>()?;
    let [y, m, d, hh, mm, ss] = f[..] else {
        return None;
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from the civil date (proleptic Gregorian).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// Runs of sessions captured within [`SAME_CAPTURE_S`] of the next (by the capture time in
/// their names), holding two sessions that share no host name: only these can be one capture.
fn candidates(sessions: &[Session]) -> Vec<Vec<&Session>> {
    let mut by_time: Vec<(i64, &Session)> = sessions
        .iter()
        .filter_map(|s| Some((capture_time(&s.name)?, s)))
        .collect();
    by_time.sort_by_key(|(t, _)| *t);
    let mut clusters: Vec<Vec<(i64, &Session)>> = Vec::new();
    for (t, s) in by_time {
        match clusters.last_mut() {
            Some(c)
                if c.last()
                    .is_some_and(|(l, _)| t.abs_diff(*l) <= SAME_CAPTURE_S) =>
            {
                c.push((t, s))
            }
            _ => clusters.push(vec![(t, s)]),
        }
    }
    let mut clusters: Vec<Vec<&Session>> = clusters
        .into_iter()
        .map(|c| c.into_iter().map(|(_, s)| s).collect())
        .collect();
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
        let mut windows: Vec<HostWindow> = run
            .hosts
            .iter()
            .filter_map(|h| {
                let p = h.analysis.as_ref().ok()?.profile();
                Some(HostWindow {
                    session: &h.session,
                    host: h.host(),
                    origin_ps: p.origin_is_wall_clock.then_some(p.origin_ps),
                    span_ps: p.span(),
                })
            })
            .collect();
        // Sessions in the order of their names (their capture times), as `xlens hosts` lists them.
        windows.sort_by(|a, b| a.session.cmp(b.session));
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

#[cfg(test)]
mod tests {
    use super::capture_time;

    #[test]
    fn capture_times_of_session_names() {
        // By hand: 2026-12-02 is 20,789 days after 1970-01-01.
        assert_eq!(
            capture_time("2026_12_02_14_01_33"),
            Some(20_789 * 86_400 + 14 * 3600 + 60 + 33)
        );
        assert_eq!(capture_time("1970_01_01_00_00_00"), Some(0));
        // It inverts the store's own naming.
        for secs in [0u64, 951_782_400, 1_796_219_174] {
            assert_eq!(
                capture_time(&xlens_store::session_id_at(secs)),
                Some(secs as i64)
            );
        }
        for other in [
            "jax_mlp_small",
            "2026_12_02",
            "2026_13_02_14_01_33",
            "worker_a",
        ] {
            assert_eq!(capture_time(other), None, "{other}");
        }
    }
}
