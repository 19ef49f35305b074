//! Inserting a few items into a long vector at sorted places, in place: what the incremental
//! compiler splices into its 100,000-rule table at every change, with no second vector (a copy of
//! the table's rules, and another of their keys, would be tens of megabytes held for nothing
//! between changes).
//!
//! [`insert_at`] merges from the back by swaps: each item of the vector moves once, and the
//! vector grows by the new items only.

/// Inserts each `incoming[j]` before `items[at[j]]`, for every `j` at once (`at` in the indexing of
/// `items` before the call, non-decreasing, each at most `items.len()`; items with the same place
/// keep their order in `incoming`).
///
/// The new items are appended, then the vector is merged from its end by swaps: the items not yet
/// placed are always the window just below the write position, and which new item is where in that
/// window is tracked by index (`place`, and `held` over positions modulo the window's length), so no
/// placeholder value is needed.
pub fn insert_at<T>(items: &mut Vec<T>, incoming: Vec<T>, at: &[usize]) {
    let k = incoming.len();
    debug_assert_eq!(k, at.len(), "one place per new item");
    debug_assert!(at.windows(2).all(|w| w[0] <= w[1]) && at.last().is_none_or(|&a| a <= items.len()));
    if k == 0 {
        return;
    }
    // items[..old]: the old items not placed yet; items[old..write]: the new ones not placed yet.
    let mut old = items.len();
    items.extend(incoming);
    let ring = k + 1;
    let mut place: Vec<usize> = (old..old + k).collect();
    let mut held = vec![0; ring];
    for (j, &p) in place.iter().enumerate() {
        held[p % ring] = j;
    }
    let mut write = items.len();
    let mut left = k;
    while left > 0 {
        write -= 1;
        // The new item that was at `write` goes to `to`.
        let mut swap_into = |items: &mut Vec<T>, from: usize, place: &mut Vec<usize>| {
            let displaced = held[write % ring];
            items.swap(from, write);
            place[displaced] = from;
            held[from % ring] = displaced;
        };
        if old > 0 && at[left - 1] < old {
            // The last old item comes after the last new one.
            swap_into(items, old - 1, &mut place);
            old -= 1;
        } else {
            let from = place[left - 1];
            if from != write {
                swap_into(items, from, &mut place);
            }
            left -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same insertion the plain way: a new vector.
    fn copied(items: &[u32], incoming: &[u32], at: &[usize]) -> Vec<u32> {
        let mut out = Vec::new();
        let mut j = 0;
        for (i, item) in items.iter().enumerate() {
            while j < at.len() && at[j] <= i {
                out.push(incoming[j]);
                j += 1;
            }
            out.push(*item);
        }
        out.extend(&incoming[j..]);
        out
    }

    #[test]
    fn every_new_item_lands_where_a_copy_would_put_it() {
        // A small generator (xorshift), fixed seed: many lengths, places, runs of equal places.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        for _ in 0..2_000 {
            let items: Vec<u32> = (0..next(40) as u32).collect();
            let k = next(12);
            let mut at: Vec<usize> = (0..k).map(|_| next(items.len() + 1)).collect();
            at.sort_unstable();
            let incoming: Vec<u32> = (0..k as u32).map(|j| 1_000 + j).collect();
            let want = copied(&items, &incoming, &at);
            let mut got = items.clone();
            insert_at(&mut got, incoming, &at);
            assert_eq!(got, want, "items {items:?}, at {at:?}");
        }
    }

    #[test]
    fn nothing_to_insert_leaves_the_vector_alone() {
        let mut items = vec![1, 2, 3];
        insert_at(&mut items, Vec::new(), &[]);
        assert_eq!(items, [1, 2, 3]);
    }
}
