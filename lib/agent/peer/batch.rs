//! What one `peer` chunk carries (DESIGN §6): at most the newest [`PEER_LINES`] lines, at most
//! [`PEER_BYTES`] in all — counted as the model sees them, wrappers, roster and the held-back
//! note included; everything else is held back for `peer_inbox`. Pure, so the rule is
//! property-tested without rooms or a store.

/// The newest lines a peer chunk carries.
pub(super) const PEER_LINES: usize = 3;
/// Bytes a peer chunk's text takes in the model's context, in all.
pub(super) const PEER_BYTES: usize = 800;
/// Bytes of one line's text in a peer chunk.
pub(super) const PEER_LINE_BYTES: usize = 200;

/// A heard line as the selector sees it.
pub(super) trait Carry {
    /// Reading order: newer lines sort later.
    fn order(&self) -> (i64, u64);
    /// Bytes the line costs in a peer chunk (its wrapped line and the newline).
    fn cost(&self) -> usize;
}

/// Lines fed in reading order; keeps only a few in memory however many arrive.
pub(super) struct Batch<T> {
    newest: Vec<T>,
    budget: usize,
}

impl<T: Carry> Batch<T> {
    /// A batch whose carried lines cost at most `budget` bytes.
    pub(crate) fn new(budget: usize) -> Self {
        Batch {
            newest: Vec::new(),
            budget,
        }
    }

    /// Take a line; returns a line that can no longer be carried (it is held back).
    pub(crate) fn push(&mut self, line: T) -> Option<T> {
        self.newest.push(line);
        if self.newest.len() > PEER_LINES * 2 {
            self.newest.sort_by_key(Carry::order);
            return Some(self.newest.remove(0));
        }
        None
    }

    /// The lines carried, oldest first, and the rest that are held back: the newest lines
    /// whole, dropping the oldest carried one until the batch fits the byte budget.
    pub(crate) fn finish(mut self) -> (Vec<T>, Vec<T>) {
        self.newest.sort_by_key(Carry::order);
        let mut held = Vec::new();
        while self.newest.len() > PEER_LINES {
            held.push(self.newest.remove(0));
        }
        let size = |ls: &[T]| ls.iter().map(Carry::cost).sum::<usize>();
        while !self.newest.is_empty() && size(&self.newest) > self.budget {
            held.push(self.newest.remove(0));
        }
        (self.newest, held)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct L {
        ts: i64,
        offset: u64,
        cost: usize,
    }

    impl Carry for L {
        fn order(&self) -> (i64, u64) {
            (self.ts, self.offset)
        }
        fn cost(&self) -> usize {
            self.cost
        }
    }

    fn run(lines: &[L]) -> (Vec<L>, Vec<L>) {
        let mut b = Batch::new(PEER_BYTES);
        let mut held: Vec<L> = lines.iter().filter_map(|l| b.push(l.clone())).collect();
        let (carried, rest) = b.finish();
        held.extend(rest);
        (carried, held)
    }

    #[test]
    fn carries_the_three_newest_and_holds_the_rest() {
        let lines: Vec<L> = (0..5)
            .map(|i| L {
                ts: i,
                offset: i as u64,
                cost: 10,
            })
            .collect();
        let (carried, held) = run(&lines);
        assert_eq!(carried, lines[2..].to_vec());
        assert_eq!(held.len(), 2);
    }

    #[test]
    fn the_byte_budget_drops_the_oldest_carried_line() {
        let lines = vec![
            L {
                ts: 1,
                offset: 0,
                cost: 500,
            },
            L {
                ts: 2,
                offset: 1,
                cost: 200,
            },
            L {
                ts: 3,
                offset: 2,
                cost: 200,
            },
        ];
        let (carried, held) = run(&lines);
        assert_eq!(carried, lines[1..].to_vec());
        assert_eq!(held, lines[..1].to_vec());
    }

    proptest! {
        /// Every line is either carried or held, never both; the carried ones are the newest,
        /// oldest first, at most PEER_LINES of them and within the byte budget; and a line is
        /// held back only when carrying it too would break a limit.
        #[test]
        fn the_batch_is_the_newest_suffix_that_fits(
            raw in proptest::collection::vec((0i64..20, 0usize..500), 0..20)
        ) {
            let lines: Vec<L> = raw.iter().enumerate()
                .map(|(i, (ts, cost))| L { ts: *ts, offset: i as u64, cost: *cost })
                .collect();
            let (carried, held) = run(&lines);
            prop_assert_eq!(carried.len() + held.len(), lines.len());
            let mut all: Vec<u64> = carried.iter().chain(&held).map(|l| l.offset).collect();
            all.sort();
            prop_assert_eq!(all, (0..lines.len() as u64).collect::<Vec<_>>());
            let mut sorted = lines.clone();
            sorted.sort_by_key(Carry::order);
            let suffix = &sorted[sorted.len() - carried.len()..];
            prop_assert_eq!(&carried[..], suffix);
            prop_assert!(carried.len() <= PEER_LINES);
            prop_assert!(carried.iter().map(|l| l.cost).sum::<usize>() <= PEER_BYTES);
            // Maximal: one more (older) line would break the count or the budget.
            if carried.len() < lines.len() {
                let next = &sorted[sorted.len() - carried.len() - 1];
                let with = carried.iter().map(|l| l.cost).sum::<usize>() + next.cost;
                prop_assert!(carried.len() == PEER_LINES || with > PEER_BYTES);
            }
        }
    }
}
