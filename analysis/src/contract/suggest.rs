//! "Did you mean" suggestions for misspelled names.

/// The candidate closest to `name` by edit distance, when it is close enough to be a typo:
/// at most one edit for short names, about a third of the length for longer ones.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    // One- and two-letter names (dims such as `N`) are suggested only for a change of case.
    let length = name.chars().count();
    let limit = if length < 3 { 0 } else { (length / 3).max(1) };
    candidates
        .into_iter()
        .filter(|candidate| *candidate != name)
        .map(|candidate| {
            (
                edit_distance(&name.to_lowercase(), &candidate.to_lowercase()),
                candidate,
            )
        })
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance counting a swap of two neighbours as one edit (`tagret` → `target`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut previous2: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let substitution = previous[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            current[j] = substitution.min(previous[j] + 1).min(current[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                current[j] = current[j].min(previous2[j - 2] + 1);
            }
        }
        std::mem::swap(&mut previous2, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swapped_letters_are_one_edit() {
        assert_eq!(edit_distance("tagret", "target"), 1);
        assert_eq!(did_you_mean("tagret", ["logits", "target"]), Some("target"));
    }

    #[test]
    fn far_names_get_no_suggestion() {
        assert_eq!(did_you_mean("weights", ["logits", "target"]), None);
        assert_eq!(did_you_mean("f23", ["f32", "f16", "u8"]), Some("f32"));
        assert_eq!(did_you_mean("flaot", ["float", "int"]), Some("float"));
        assert_eq!(did_you_mean("H", ["N", "C"]), None);
        assert_eq!(did_you_mean("n", ["N", "C"]), Some("N"));
    }
}
