//! Position arithmetic, written once: the embedded store answers polls with it, and the hub
//! pushes every fan the same number from its mirror of the show.

/// Where the waiting ticket with arrival number `arrival` stands (1: admitted next), without walking
/// the queue: every ticket up to `head` (the highest sequence ever admitted) is gone, and so
/// are the `left_below` tickets between `head` and `seq` that left early, i.e.
/// `|left ∩ (head, arrival)|`. This is the ticket's rank + 1 in the queue, which is what the
/// Redis store answers with `ZRANK`.
///
/// The hub walks its fans in sequence order and passes a running count of the leavers below
/// each; the embedded store counts them in its `left` set.
pub fn position(arrival: u64, head: u64, left_below: u64) -> u64 {
    arrival - head - left_below
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn position_is_rank_plus_one_among_those_still_waiting() {
        // Tickets 1..=12 joined; 1..=4 were admitted (head 4, and 2 had left before that);
        // 6, 7 and 10 left early.
        let head = 4;
        let left: BTreeSet<u64> = [6, 7, 10].into();
        let waiting: Vec<u64> = (head + 1..=12).filter(|s| !left.contains(s)).collect();
        for (rank, &arrival) in waiting.iter().enumerate() {
            let below = left.range(head + 1..arrival).count() as u64;
            assert_eq!(
                position(arrival, head, below),
                rank as u64 + 1,
                "arrival {arrival}"
            );
        }
    }

    #[test]
    fn the_first_behind_the_head_is_next() {
        assert_eq!(position(1, 0, 0), 1);
        assert_eq!(position(8, 7, 0), 1);
        assert_eq!(position(9, 7, 1), 1);
    }
}
