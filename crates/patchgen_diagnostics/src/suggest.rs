//! "Did you mean": the known names nearest to a misspelt one, by edit
//! distance (Levenshtein, on characters).

/// The edit distance between two strings.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Up to `n` known names nearest to `word`, nearest first (ties in the
/// given order); names containing `word` rank as near as a
/// one-letter slip, and a shared prefix brings a name nearer.
pub fn nearest<'k>(word: &str, known: impl IntoIterator<Item = &'k str>, n: usize) -> Vec<&'k str> {
    let mut scored: Vec<(usize, usize, &str)> = known
        .into_iter()
        .enumerate()
        .map(|(i, k)| {
            let d = distance(word, k);
            let d = if k.contains(word) || word.contains(k) { d.min(1) } else { d };
            let prefix = word.chars().zip(k.chars()).take_while(|(a, b)| a == b).count();
            (d.saturating_sub(prefix / 2), i, k)
        })
        .collect();
    scored.sort();
    scored.into_iter().take(n).map(|(_, _, k)| k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_and_ranking() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(nearest("qwen4", ["llama", "qwen3", "qwen2", "qwen3_moe"], 2), ["qwen3", "qwen2"]);
        assert_eq!(nearest("qwen3_m", ["llama", "qwen3_moe", "qwen3"], 1), ["qwen3_moe"]);
    }
}
