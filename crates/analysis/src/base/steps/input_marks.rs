//! Host annotations that mark a training loop's data stage, which xlens counts as input.
//!
//! XProf counts as input only tf.data's own events (`IteratorGetNext*`, root pipeline stages) and
//! host-to-device copies; a JAX loop that wraps its batch creation in
//! `jax.profiler.TraceAnnotation("data")` gets 0% input there, its data time filed as host
//! compute. xlens reads such annotations as input too, in every view that splits a step
//! (the step breakdown, so the overview, input pipeline, advice, summaries and diff), and the
//! views name the annotations they counted ([`crate::base::steps::step_db::StepDb::input_annotations`]).
//!
//! An annotation marks input when its whole name is made of data-stage words (`data`, `load`,
//! `next`, `next_batch`, `get_batch`, `data_loading`, `input_pipeline`, ...), or it names a data
//! loader (`DataLoader`, `data_loader`). Names with other words (`forward_backward`,
//! `load_weights_and_step`, `jit(data_parallel)`) do not.

/// Words that say "data" by themselves.
const DATA_WORDS: &[&str] = &[
    "data",
    "dataset",
    "load",
    "loading",
    "loader",
    "dataloader",
    "next",
    "batch",
    "batches",
    "input",
    "inputs",
    "prefetch",
];

/// Words that name a data stage beside a [`DATA_WORDS`] one (`get_batch`, `input_pipeline`), but
/// alone, or together, say nothing of data.
const STAGE_WORDS: &[&str] = &["get", "fetch", "read", "iter", "iterator", "pipeline"];

/// Whether a host annotation's name marks the loop's data stage (see the module docs).
pub fn is_input_annotation(name: &str) -> bool {
    let name = name.trim();
    if name.is_empty() || name.len() > 64 {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    if lower.contains("dataloader") || lower.contains("data_loader") {
        return true;
    }
    let mut words = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .peekable();
    if words.peek().is_none() {
        return false;
    }
    let mut says_data = false;
    for w in words {
        let data = DATA_WORDS.contains(&w);
        if !data && !STAGE_WORDS.contains(&w) {
            return false;
        }
        says_data |= data;
    }
    says_data
}

/// XProf's input classification of a host's steps (`HIGHLY` from 20% of step time waiting for
/// input, `MODERATELY` from 5%, else `POTENTIALLY` when 3% is covered by no event of the step,
/// else `NOT`), and the sentence that says it. The overview and the input pipeline both give it,
/// so they never disagree. `annotations` are the data-stage annotations counted as input, named
/// in the sentence.
pub fn input_verdict(
    steps: usize,
    input_percent: f64,
    all_other_percent: f64,
    annotations: &[String],
) -> (&'static str, String) {
    let from = if annotations.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = annotations.iter().map(|a| format!("`{a}`")).collect();
        format!(
            " (input includes the loop's data-stage annotation{} {})",
            if names.len() > 1 { "s" } else { "" },
            names.join(", ")
        )
    };
    let p = input_percent;
    if steps == 0 {
        (
            "",
            "No steps, so the input share of step time is unknown.".to_string(),
        )
    } else if p >= 20.0 {
        ("HIGHLY", format!("Highly input-bound: {p:.1}% of step time waits for input{from}; reduce the input time first."))
    } else if p >= 5.0 {
        ("MODERATELY", format!("Moderately input-bound: {p:.1}% of step time waits for input{from}; reduce both input time and the rest."))
    } else if all_other_percent >= 3.0 {
        ("POTENTIALLY", format!("Potentially input-bound: {p:.1}% of step time waits for input{from}, but {all_other_percent:.1}% is covered by no event of the step (\"All others\": I/O or Python, for example)."))
    } else {
        (
            "NOT",
            format!("Not input-bound: {p:.1}% of step time waits for input{from}."),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::is_input_annotation;

    #[test]
    fn data_stage_names_are_input_and_others_are_not() {
        for n in [
            "data",
            "load",
            "next",
            "next_batch",
            "get_batch",
            "load_batch",
            "data_loading",
            "input_pipeline",
            "Data Loading",
            "prefetch",
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        ] {
            assert!(is_input_annotation(n), "{n}");
        }
        for n in [
            "train",
            "forward_backward",
            "optimizer",
            "forward",
            "get",
            "read",
            "load_weights_and_step",
            "jit(data_parallel)",
            "PjitFunction(train_step)",
            "",
            "::",
        ] {
            assert!(!is_input_annotation(n), "{n}");
        }
    }
}
