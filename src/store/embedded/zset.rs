//! A sorted set as Redis keeps one: members ordered by (score, member), each member once,
//! with its rank at hand.
//!
//! The order lives in a treap (a binary search tree balanced by random priorities) whose nodes
//! know the size of their subtree, so a member's rank, the count of a score range and the
//! member at a rank each cost O(log n), as in Redis's skip list: `ZRANK` on a queue of two
//! million fans walks some forty nodes, not two million. The nodes sit in one `Vec` (freed
//! slots are reused) and a map from member to slot answers `ZSCORE` in O(1).

use std::cmp::Ordering;
use std::collections::HashMap;

use bytes::Bytes;

/// No node: the child of a leaf, the root of an empty tree.
const NIL: u32 = u32::MAX;

struct Node {
    score: f64,
    member: Bytes,
    priority: u32,
    left: u32,
    right: u32,
    /// Nodes in this subtree, this one included.
    size: u32,
}

/// A score bound of a range, as `ZRANGEBYSCORE` reads one (`(` makes it exclusive).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Bound {
    pub(super) score: f64,
    pub(super) exclusive: bool,
}

/// A sorted set.
pub(super) struct ZSet {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    slots: HashMap<Bytes, u32>,
    /// xorshift32 state for the priorities.
    seed: u32,
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            slots: HashMap::new(),
            seed: 0x9E37_79B9,
        }
    }
}

/// Redis orders by score, then by member bytes; -0 and 0 are one score.
fn key_cmp(a_score: f64, a_member: &[u8], b_score: f64, b_member: &[u8]) -> Ordering {
    a_score
        .partial_cmp(&b_score)
        .unwrap_or(Ordering::Equal)
        .then_with(|| a_member.cmp(b_member))
}

impl ZSet {
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub(super) fn score(&self, member: &[u8]) -> Option<f64> {
        self.slots
            .get(member)
            .map(|&i| self.nodes[i as usize].score)
    }

    /// Adds `member` at `score`, or moves it there; whether it is new.
    pub(super) fn insert(&mut self, score: f64, member: &[u8]) -> bool {
        // One zero: Redis does not tell -0 from 0.
        let score = if score == 0.0 { 0.0 } else { score };
        if let Some(&slot) = self.slots.get(member) {
            if self.nodes[slot as usize].score == score {
                return false;
            }
            let old = self.nodes[slot as usize].score;
            self.root = self.detach(self.root, old, member);
            let n = &mut self.nodes[slot as usize];
            n.score = score;
            n.left = NIL;
            n.right = NIL;
            n.size = 1;
            self.root = self.attach(self.root, slot);
            return false;
        }
        let member = Bytes::copy_from_slice(member);
        let priority = self.next_priority();
        let node = Node {
            score,
            member: member.clone(),
            priority,
            left: NIL,
            right: NIL,
            size: 1,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.nodes[slot as usize] = node;
                slot
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.slots.insert(member, slot);
        self.root = self.attach(self.root, slot);
        true
    }

    /// Removes `member`; whether it was there.
    pub(super) fn remove(&mut self, member: &[u8]) -> bool {
        let Some(slot) = self.slots.remove(member) else {
            return false;
        };
        let score = self.nodes[slot as usize].score;
        self.root = self.detach(self.root, score, member);
        // Drop the member's bytes now; the slot is reused by the next insert.
        self.nodes[slot as usize].member = Bytes::new();
        self.free.push(slot);
        if self.slots.is_empty() {
            self.nodes.clear();
            self.free.clear();
            self.root = NIL;
        }
        true
    }

    /// The 0-based rank of `member`, lowest score first.
    pub(super) fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        let mut rank = 0;
        let mut at = self.root;
        while at != NIL {
            let n = &self.nodes[at as usize];
            match key_cmp(score, member, n.score, &n.member) {
                Ordering::Less => at = n.left,
                Ordering::Equal => return Some(rank + self.size(n.left)),
                Ordering::Greater => {
                    rank += self.size(n.left) + 1;
                    at = n.right;
                }
            }
        }
        None
    }

    /// How many members score below `score` (or at most `score`, when `inclusive`).
    fn count_below(&self, score: f64, inclusive: bool) -> usize {
        let mut count = 0;
        let mut at = self.root;
        while at != NIL {
            let n = &self.nodes[at as usize];
            let below = if inclusive {
                n.score <= score
            } else {
                n.score < score
            };
            if below {
                count += self.size(n.left) + 1;
                at = n.right;
            } else {
                at = n.left;
            }
        }
        count
    }

    /// The ranks `[from, to)` of the members within `min..max`.
    pub(super) fn score_ranks(&self, min: Bound, max: Bound) -> (usize, usize) {
        let from = self.count_below(min.score, min.exclusive);
        let to = self.count_below(max.score, !max.exclusive);
        (from, to.max(from))
    }

    /// The member at 0-based `rank`, with its score.
    #[cfg(test)]
    pub(super) fn at_rank(&self, rank: usize) -> Option<(f64, &Bytes)> {
        let mut rank = rank;
        let mut at = self.root;
        while at != NIL {
            let n = &self.nodes[at as usize];
            let left = self.size(n.left);
            match rank.cmp(&left) {
                Ordering::Less => at = n.left,
                Ordering::Equal => return Some((n.score, &n.member)),
                Ordering::Greater => {
                    rank -= left + 1;
                    at = n.right;
                }
            }
        }
        None
    }

    /// The members of ranks `[from, to)` in order, with their scores.
    pub(super) fn range(&self, from: usize, to: usize) -> Vec<(f64, Bytes)> {
        let mut out = Vec::with_capacity(to.saturating_sub(from).min(self.len()));
        // In order from `from`: the path down to it, then a plain in-order walk.
        let mut stack = Vec::new();
        let mut rank = from;
        let mut at = self.root;
        while at != NIL {
            let n = &self.nodes[at as usize];
            let left = self.size(n.left);
            if rank < left {
                stack.push(at);
                at = n.left;
            } else if rank == left {
                stack.push(at);
                break;
            } else {
                rank -= left + 1;
                at = n.right;
            }
        }
        while out.len() < to.saturating_sub(from) {
            let Some(at) = stack.pop() else { break };
            let n = &self.nodes[at as usize];
            out.push((n.score, n.member.clone()));
            let mut next = n.right;
            while next != NIL {
                stack.push(next);
                next = self.nodes[next as usize].left;
            }
        }
        out
    }

    /// Members in score order with their scores (a plain walk of all of them).
    #[cfg(test)]
    pub(super) fn all(&self) -> Vec<(f64, Bytes)> {
        self.range(0, self.len())
    }

    fn size(&self, at: u32) -> usize {
        if at == NIL {
            0
        } else {
            self.nodes[at as usize].size as usize
        }
    }

    fn fix(&mut self, at: u32) {
        let (l, r) = {
            let n = &self.nodes[at as usize];
            (n.left, n.right)
        };
        self.nodes[at as usize].size = (1 + self.size(l) + self.size(r)) as u32;
    }

    fn next_priority(&mut self) -> u32 {
        let mut x = self.seed;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.seed = x;
        x
    }

    /// Splits the subtree at `at` into the nodes ordered before (score, member) and the rest.
    fn split(&mut self, at: u32, score: f64, member: &[u8]) -> (u32, u32) {
        if at == NIL {
            return (NIL, NIL);
        }
        let before = {
            let n = &self.nodes[at as usize];
            key_cmp(n.score, &n.member, score, member) == Ordering::Less
        };
        if before {
            let right = self.nodes[at as usize].right;
            let (l, r) = self.split(right, score, member);
            self.nodes[at as usize].right = l;
            self.fix(at);
            (at, r)
        } else {
            let left = self.nodes[at as usize].left;
            let (l, r) = self.split(left, score, member);
            self.nodes[at as usize].left = r;
            self.fix(at);
            (l, at)
        }
    }

    /// Joins two subtrees, every node of `a` ordered before every node of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].priority > self.nodes[b as usize].priority {
            let right = self.nodes[a as usize].right;
            let merged = self.merge(right, b);
            self.nodes[a as usize].right = merged;
            self.fix(a);
            a
        } else {
            let left = self.nodes[b as usize].left;
            let merged = self.merge(a, left);
            self.nodes[b as usize].left = merged;
            self.fix(b);
            b
        }
    }

    /// Puts the lone node `slot` into the subtree at `at`; the subtree's new root.
    fn attach(&mut self, at: u32, slot: u32) -> u32 {
        if at == NIL {
            return slot;
        }
        let (score, priority) = {
            let n = &self.nodes[slot as usize];
            (n.score, n.priority)
        };
        if priority > self.nodes[at as usize].priority {
            let member = self.nodes[slot as usize].member.clone();
            let (l, r) = self.split(at, score, &member);
            let n = &mut self.nodes[slot as usize];
            n.left = l;
            n.right = r;
            self.fix(slot);
            return slot;
        }
        let goes_left = {
            let (n, s) = (&self.nodes[slot as usize], &self.nodes[at as usize]);
            key_cmp(n.score, &n.member, s.score, &s.member) == Ordering::Less
        };
        if goes_left {
            let left = self.nodes[at as usize].left;
            let new = self.attach(left, slot);
            self.nodes[at as usize].left = new;
        } else {
            let right = self.nodes[at as usize].right;
            let new = self.attach(right, slot);
            self.nodes[at as usize].right = new;
        }
        self.fix(at);
        at
    }

    /// Takes the node of (score, member) out of the subtree at `at`; the subtree's new root.
    fn detach(&mut self, at: u32, score: f64, member: &[u8]) -> u32 {
        if at == NIL {
            return NIL;
        }
        let order = {
            let n = &self.nodes[at as usize];
            key_cmp(score, member, n.score, &n.member)
        };
        match order {
            Ordering::Equal => {
                let (l, r) = {
                    let n = &self.nodes[at as usize];
                    (n.left, n.right)
                };
                self.merge(l, r)
            }
            Ordering::Less => {
                let left = self.nodes[at as usize].left;
                let new = self.detach(left, score, member);
                self.nodes[at as usize].left = new;
                self.fix(at);
                at
            }
            Ordering::Greater => {
                let right = self.nodes[at as usize].right;
                let new = self.detach(right, score, member);
                self.nodes[at as usize].right = new;
                self.fix(at);
                at
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incl(score: f64) -> Bound {
        Bound {
            score,
            exclusive: false,
        }
    }

    #[test]
    fn ranks_follow_score_then_member_through_inserts_moves_and_removals() {
        let mut z = ZSet::default();
        // A model to compare against: a sorted vector.
        let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
        let mut x: u64 = 7;
        for step in 0..4000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let member = format!("m{}", (x >> 33) % 500).into_bytes();
            let score = ((x >> 20) % 50) as f64;
            if step % 3 == 2 {
                assert_eq!(
                    z.remove(&member),
                    model.iter().any(|(_, m)| *m == member),
                    "step {step}"
                );
                model.retain(|(_, m)| *m != member);
            } else {
                let new = !model.iter().any(|(_, m)| *m == member);
                assert_eq!(z.insert(score, &member), new, "step {step}");
                model.retain(|(_, m)| *m != member);
                model.push((score, member));
            }
            model.sort_by(|a, b| key_cmp(a.0, &a.1, b.0, &b.1));
        }
        assert_eq!(z.len(), model.len());
        for (i, (score, member)) in model.iter().enumerate() {
            assert_eq!(z.rank(member), Some(i));
            assert_eq!(z.score(member), Some(*score));
            let (s, m) = z.at_rank(i).unwrap();
            assert_eq!((s, m.as_ref()), (*score, member.as_slice()));
        }
        let all: Vec<(f64, Vec<u8>)> = z.all().into_iter().map(|(s, m)| (s, m.to_vec())).collect();
        assert_eq!(all, model);
        let below_10 = model.iter().filter(|(s, _)| *s < 10.0).count();
        let upto_20 = model.iter().filter(|(s, _)| *s <= 20.0).count();
        assert_eq!(
            z.score_ranks(
                Bound {
                    score: 10.0,
                    exclusive: false
                },
                incl(20.0)
            ),
            (below_10, upto_20)
        );
    }

    #[test]
    fn a_range_from_the_middle_walks_in_order() {
        let mut z = ZSet::default();
        for i in 0..100 {
            z.insert(f64::from(100 - i), format!("{i:03}").as_bytes());
        }
        let got: Vec<f64> = z.range(10, 15).into_iter().map(|(s, _)| s).collect();
        assert_eq!(got, vec![11.0, 12.0, 13.0, 14.0, 15.0]);
        assert_eq!(z.range(98, 200).len(), 2);
        assert!(z.range(100, 200).is_empty());
    }

    #[test]
    fn emptied_sets_forget_their_slots() {
        let mut z = ZSet::default();
        z.insert(1.0, b"a");
        z.insert(-0.0, b"b");
        assert_eq!(z.score(b"b"), Some(0.0));
        assert!(z.remove(b"a") && z.remove(b"b"));
        assert!(z.is_empty() && z.nodes.is_empty());
        assert_eq!(z.rank(b"a"), None);
    }
}
