//! The lane rule as `verify` checks it (docs/lanes.md): how a tick's places go to the lanes,
//! worked out again from what the tick record says, with the very operations and order of
//! `lane_quotas` in `prelude.lua`, and each lane's part held against what the tick did.

use crate::model::LaneTurn;

/// A tick looks at no more than this many fans past its places, over every lane together
/// (`budget` in admit.lua).
const LOOK_PAST: u64 = 1000;

/// Each lane's places (in `turns`' order) when `places` go to the lanes `turns` (their
/// shares, priority, and fans queued) at the store's second `second`.
pub(super) fn quotas(places: u64, turns: &[LaneTurn], second: u64) -> Vec<u64> {
    let mut q = vec![0u64; turns.len()];
    let mut left = places as f64;
    for (i, t) in turns.iter().enumerate() {
        if t.share.is_none() {
            let take = (t.queued as f64).min(left);
            q[i] = take as u64;
            left -= take;
        }
    }
    let share = |i: usize| f64::from(turns[i].share.unwrap_or(0));
    let queued = |i: usize| turns[i].queued as f64;
    let mut x: Vec<Option<f64>> = vec![None; turns.len()];
    let mut open: Vec<usize> = Vec::new();
    for (i, t) in turns.iter().enumerate() {
        if t.share.is_some() && t.queued > 0 {
            open.push(i);
            x[i] = Some(0.0);
        }
    }
    while left > 0.0 && !open.is_empty() {
        let mut total = 0.0;
        for &i in &open {
            total += share(i);
        }
        let (full, rest): (Vec<usize>, Vec<usize>) = open
            .iter()
            .partition(|&&i| x[i].unwrap_or(0.0) + left * share(i) / total >= queued(i));
        if full.is_empty() {
            for &i in &open {
                x[i] = Some(x[i].unwrap_or(0.0) + left * share(i) / total);
            }
            left = 0.0;
        } else {
            for &i in &full {
                left -= queued(i) - x[i].unwrap_or(0.0);
                x[i] = Some(queued(i));
            }
            open = rest;
        }
    }
    let v = second as f64 * 0.618_033_988_749_894_9;
    let u = v - v.floor();
    let mut c = 0.0;
    for (i, part) in x.iter().enumerate() {
        if let Some(part) = part {
            let from = (c + u + 1e-9).floor();
            c += part;
            q[i] = ((c + u + 1e-9).floor() - from) as u64;
        }
    }
    q
}

/// Whether every lane of a tick got its part: each lane let in at least its places, unless
/// the tick reached every fan queued in it (the rest away) or looked as far past its places
/// as a tick does (over every lane).
pub(super) fn shortchanged(places: u64, turns: &[LaneTurn], second: u64) -> Option<String> {
    let q = quotas(places, turns, second);
    let reached: u64 = turns.iter().map(|t| t.reached).sum();
    let let_in: u64 = turns.iter().map(|t| t.let_in).sum();
    let looked_all = reached - let_in.min(reached) >= LOOK_PAST;
    turns.iter().zip(q).find_map(|(t, part)| {
        let ran_out = t.reached >= t.queued || looked_all;
        (t.let_in < part && !ran_out).then(|| {
            format!(
                "lane {} let in {} of the {part} places its share gives it, with fans still \
                 queued",
                t.slot, t.let_in
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(slot: u8, share: Option<u8>, queued: u64) -> LaneTurn {
        LaneTurn {
            slot,
            share,
            queued,
            let_in: 0,
            reached: 0,
        }
    }

    #[test]
    fn priority_first_then_shares_summing_to_the_places() {
        let turns = [
            turn(2, None, 3),
            turn(1, Some(80), 100),
            turn(0, Some(20), 100),
        ];
        for second in 0..50 {
            let q = quotas(13, &turns, second);
            assert_eq!(q[0], 3);
            assert_eq!(q[1] + q[2], 10);
            assert_eq!(q[1], 8, "second {second}");
        }
        // Over the seconds, a part of 2.4 is let in 2.4 a tick on average.
        let turns = [turn(1, Some(80), 1000), turn(0, Some(20), 1000)];
        let presale: u64 = (0..1000).map(|s| quotas(3, &turns, s)[0]).sum();
        assert!((2350..=2450).contains(&presale), "{presale}");
    }

    #[test]
    fn a_lane_with_few_fans_leaves_its_share_to_the_others() {
        let turns = [turn(1, Some(80), 2), turn(0, Some(20), 1000)];
        assert_eq!(quotas(10, &turns, 7), vec![2, 8]);
        let empty = [turn(1, Some(80), 0), turn(0, Some(20), 1000)];
        assert_eq!(quotas(10, &empty, 7), vec![0, 10]);
    }

    #[test]
    fn a_lane_let_in_less_than_its_part_is_found() {
        let mut turns = [turn(1, Some(80), 100), turn(0, Some(20), 100)];
        turns[0].let_in = 8;
        turns[0].reached = 8;
        turns[1].let_in = 2;
        turns[1].reached = 2;
        assert_eq!(shortchanged(10, &turns, 3), None);
        turns[0].let_in = 2;
        turns[0].reached = 2;
        turns[1].let_in = 8;
        turns[1].reached = 8;
        assert!(shortchanged(10, &turns, 3).is_some_and(|w| w.contains("lane 1 let in 2")));
        // Every fan of the lane reached (the rest away): no claim.
        turns[0].queued = 2;
        assert_eq!(shortchanged(10, &turns, 3), None);
    }
}
