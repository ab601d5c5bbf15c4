//! The decisions of a FIFO receive's walk, shared by both engines: the engines read rows
//! (each in its own SQL) and hand them here; this says which messages the receive takes,
//! which expired ones it drops and which it dead-letters, and which groups need more rows.
//!
//! The rule (SQS Developer Guide, "FIFO queue logic", as AWS's recorded answers show it):
//! a group gives its visible messages in send order up to its first hidden one (in flight
//! or delayed), which holds back every later message of the group (the engines leave such
//! rows out), so a message received again after its visibility ran out may be returned
//! while a later one of its group is still in flight. A receive takes as many of one
//! group as it can before the next; groups come in the order their first candidate became
//! visible (sent, or made visible again), ties in send order, as AWS returns a group that
//! was never received before groups whose visibility timeouts ran out.
//!
//! How the engines walk: the visible messages of the queue in send order, a window at a
//! time, only to find the open groups in order ([`FifoWalk::row`]); when a window was full
//! (more rows may follow), each group of it that can still count gets the rest of what the
//! receive wants of it through the group index ([`FifoWalk::groups_to_extend`],
//! [`FifoWalk::extra`]). [`FifoScan`] drives those reads (window sizes, which group to
//! read from where and how far) for both engines; each answers them in its own SQL. A receive so reads about as many rows as it returns plus those of
//! the groups it passes, however deep the queue and however far apart a group's messages.
//! Messages with no group (none in FIFO queues: the service requires MessageGroupId) count
//! as one group, read by the walk only.

use std::collections::{HashMap, HashSet};

use loft_core::model::ReceiveRequest;

/// The largest window of a FIFO receive's walk (rows read per statement).
pub(crate) const MAX_FIFO_WINDOW: i64 = 4096;

/// What a [`FifoScan`] asks its engine to read next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FifoRead {
    /// The queue's visible messages after seq `after`, in send order, at most `limit`:
    /// each row to [`FifoScan::window_row`], then [`FifoScan::end_window`].
    Window { after: i64, limit: i64 },
    /// For each group, in this order, its visible messages as [`GroupRead`] says: each
    /// row to [`FifoScan::group_row`] with the read's index, then [`FifoScan::end_groups`].
    Groups(Vec<GroupRead>),
    /// Nothing more to read: [`FifoScan::finish`].
    Done,
}

/// One group's read past a window: its visible messages with `from < seq < head`, in
/// send order, at most `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupRead {
    /// The group (`""`: messages without one).
    pub group: String,
    /// Only messages after this seq.
    pub from: i64,
    /// Only messages before this seq: the group's first hidden message (`i64::MAX` when
    /// none is hidden).
    pub head: i64,
    /// At most this many rows.
    pub limit: i64,
}

/// A FIFO receive's reads, decided once for both engines (the window doubling and the
/// group reads of [`FifoWalk`]); the engine answers each [`FifoRead`] in its own SQL:
///
/// ```text
/// loop { match scan.next() { Window {..} => rows to window_row, end_window;
///                            Groups(reads) => rows to group_row, end_groups;
///                            Done => break } }
/// ```
///
/// The first window is `4 × MaxNumberOfMessages + 16` rows, and each next one twice the
/// last, up to [`MAX_FIFO_WINDOW`]; the walk ends when the receive has all it wants or a
/// window comes back short (nothing past it). After a full window the groups that can
/// still count are read past it through the group index, all at once, each up to what it
/// could give at most, and a group whose read came back full and that still has room is
/// read on. An engine may answer a [`FifoRead::Groups`] one group after another, skipping
/// a read, or stopping it, once [`FifoScan::wants_group`] says it can no longer count (the
/// SQLite store does, so a deep group that fills the receive is the only one read);
/// PostgreSQL answers them all in one statement.
pub(crate) struct FifoScan<'a> {
    walk: FifoWalk<'a>,
    /// Each group's first hidden (in flight or delayed) unexpired message: it holds back
    /// the group's later ones.
    heads: HashMap<String, i64>,
    /// The last seq the walk read in send order.
    after: i64,
    /// The current window's size (rows).
    window: i64,
    /// Whether the current window came back full.
    full: bool,
    /// Rows read and last seq read of each group read asked (parallel to `next`'s reads).
    read: Vec<(i64, i64)>,
    next: FifoRead,
}

impl<'a> FifoScan<'a> {
    /// The scan of receive `req`, given each group's first hidden message (`heads`).
    pub fn new(req: &'a ReceiveRequest, heads: HashMap<String, i64>) -> Self {
        let walk = FifoWalk::new(req);
        let window = (req.max_messages as i64) * 4 + 16;
        let next = if walk.is_full() {
            FifoRead::Done
        } else {
            FifoRead::Window {
                after: 0,
                limit: window,
            }
        };
        FifoScan {
            walk,
            heads,
            after: 0,
            window,
            full: false,
            read: Vec::new(),
            next,
        }
    }

    /// What to read now.
    pub fn next(&self) -> FifoRead {
        self.next.clone()
    }

    /// A row of the window: a visible message in send order, visible since `visible_at`
    /// (ms); `group` is `""` for a message without one.
    pub fn window_row(
        &mut self,
        seq: i64,
        receive_count: i64,
        expires_at: i64,
        group: &str,
        visible_at: i64,
    ) {
        self.after = seq;
        if self.heads.get(group).is_some_and(|h| seq > *h) {
            return;
        }
        self.walk
            .row(group, seq, receive_count, expires_at, visible_at);
    }

    /// The window's `rows` rows were all given.
    pub fn end_window(&mut self, rows: usize) {
        self.full = rows as i64 == self.window;
        let reads: Vec<GroupRead> = self
            .walk
            .groups_to_extend(self.full)
            .into_iter()
            .map(|(group, most)| GroupRead {
                from: self.after,
                head: self.heads.get(&group).copied().unwrap_or(i64::MAX),
                limit: most as i64 + 4,
                group,
            })
            .collect();
        self.ask_groups(reads);
    }

    /// A row of the `i`-th read of the current [`FifoRead::Groups`], in send order.
    pub fn group_row(&mut self, i: usize, seq: i64, receive_count: i64, expires_at: i64) {
        let FifoRead::Groups(reads) = &self.next else {
            return;
        };
        let (Some(r), Some(count)) = (reads.get(i), self.read.get_mut(i)) else {
            return;
        };
        *count = (count.0 + 1, seq);
        self.walk.extra(&r.group, seq, receive_count, expires_at);
    }

    /// Whether the `i`-th read of the current [`FifoRead::Groups`] can still count: its
    /// group still has room once the rows given so far (of this read and of the reads
    /// before it) are counted. Once it is `false`, every further row of that read would be
    /// passed over (neither taken nor filed as expired or dead), so an engine that reads
    /// the groups one after another may skip that read, or stop stepping it, with the
    /// same outcome: a receive of 10 from a deep group then reads that group's 10 rows,
    /// not each listed group's rows up to its limit.
    pub fn wants_group(&self, i: usize) -> bool {
        let FifoRead::Groups(reads) = &self.next else {
            return false;
        };
        reads.get(i).is_some_and(|r| self.walk.room(&r.group) > 0)
    }

    /// Every group read's rows were given: the groups whose read came back full and that
    /// still have room are read on, else the window ends.
    pub fn end_groups(&mut self) {
        let FifoRead::Groups(reads) = std::mem::replace(&mut self.next, FifoRead::Done) else {
            return;
        };
        let more: Vec<GroupRead> = reads
            .into_iter()
            .zip(std::mem::take(&mut self.read))
            .filter_map(|(r, (n, last))| {
                let room = self.walk.room(&r.group);
                (n == r.limit && room > 0).then(|| GroupRead {
                    from: last,
                    limit: room as i64 + 4,
                    ..r
                })
            })
            .collect();
        self.ask_groups(more);
    }

    /// Asks for `reads`, or, with none, ends the window.
    fn ask_groups(&mut self, reads: Vec<GroupRead>) {
        if !reads.is_empty() {
            self.read = reads.iter().map(|r| (0, r.from)).collect();
            self.next = FifoRead::Groups(reads);
            return;
        }
        self.walk.close_window();
        self.next = if !self.full || self.walk.is_full() {
            FifoRead::Done
        } else {
            self.window = (self.window * 2).min(MAX_FIFO_WINDOW);
            FifoRead::Window {
                after: self.after,
                limit: self.window,
            }
        };
    }

    /// The walk's decisions: what to take, drop and dead-letter.
    pub fn finish(self) -> FifoWalk<'a> {
        self.walk
    }
}

/// One receive's walk so far.
pub(crate) struct FifoWalk<'a> {
    req: &'a ReceiveRequest,
    want: usize,
    /// Groups of earlier windows: everything they could give is taken or looked at.
    done: HashSet<String>,
    /// This window's groups in the order of their first candidate's visibility time, with
    /// their candidates in send order.
    window: Vec<(String, Vec<i64>)>,
    /// The visibility time of each window group's first candidate, parallel to `window`.
    window_visible: Vec<i64>,
    /// The messages to claim, in the order to return them.
    pub take: Vec<i64>,
    /// Expired messages met on the way (to drop).
    pub expired: Vec<i64>,
    /// Messages at the redrive threshold met on the way (to dead-letter).
    pub dead: Vec<i64>,
}

impl<'a> FifoWalk<'a> {
    pub fn new(req: &'a ReceiveRequest) -> Self {
        FifoWalk {
            req,
            want: req.max_messages as usize,
            done: HashSet::new(),
            window: Vec::new(),
            window_visible: Vec::new(),
            take: Vec::new(),
            expired: Vec::new(),
            dead: Vec::new(),
        }
    }

    /// Whether the receive has all it wants.
    pub fn is_full(&self) -> bool {
        self.take.len() >= self.want
    }

    /// Files `seq` as expired or dead; `true` when it is a candidate instead.
    fn candidate(&mut self, seq: i64, receive_count: i64, expires_at: i64) -> bool {
        if expires_at <= self.req.now_ms {
            self.expired.push(seq);
            false
        } else if self
            .req
            .redrive
            .as_ref()
            .is_some_and(|rule| receive_count >= rule.moves_at_receive_count)
        {
            self.dead.push(seq);
            false
        } else {
            true
        }
    }

    /// A row of the walk: a visible message of an open group, in send order, visible since
    /// `visible_at` (ms).
    pub fn row(
        &mut self,
        group: &str,
        seq: i64,
        receive_count: i64,
        expires_at: i64,
        visible_at: i64,
    ) {
        if self.done.contains(group) || !self.candidate(seq, receive_count, expires_at) {
            return;
        }
        match self.window.iter_mut().find(|(g, _)| g == group) {
            Some((_, list)) => list.push(seq),
            None => {
                // Rows come in send order, so among groups first visible at the same time
                // the earlier one stays first.
                let at = self.window_visible.partition_point(|v| *v <= visible_at);
                self.window.insert(at, (group.to_owned(), vec![seq]));
                self.window_visible.insert(at, visible_at);
            }
        }
    }

    /// After a window's rows: the groups whose messages past the window may count, in
    /// order, each with how many more it could give at most. Empty unless the window was
    /// `full` (otherwise there is nothing past it).
    pub fn groups_to_extend(&self, full: bool) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        if !full {
            return out;
        }
        let mut before = self.take.len();
        for (group, list) in &self.window {
            if before + list.len() >= self.want {
                // This group fills the receive; no later one can count.
                break;
            }
            if !group.is_empty() {
                out.push((group.clone(), self.want - before - list.len()));
            }
            before += list.len();
        }
        out
    }

    /// How many more messages group `group` could still give: the receive's room left
    /// once the groups before it and its own candidates so far are counted.
    pub fn room(&self, group: &str) -> usize {
        let mut before = self.take.len();
        for (g, list) in &self.window {
            if g == group {
                return self.want.saturating_sub(before + list.len());
            }
            before += list.len();
        }
        0
    }

    /// A message of group `group` past the window, in send order (from the group index).
    pub fn extra(&mut self, group: &str, seq: i64, receive_count: i64, expires_at: i64) {
        if self.room(group) == 0 || !self.candidate(seq, receive_count, expires_at) {
            return;
        }
        if let Some((_, list)) = self.window.iter_mut().find(|(g, _)| g == group) {
            list.push(seq);
        }
    }

    /// Ends the window: its groups' candidates join `take` group by group, up to what the
    /// receive wants, and the groups are done.
    pub fn close_window(&mut self) {
        self.window_visible.clear();
        for (group, list) in std::mem::take(&mut self.window) {
            let room = self.want.saturating_sub(self.take.len());
            self.take.extend(list.into_iter().take(room));
            self.done.insert(group);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(max: u32) -> ReceiveRequest {
        ReceiveRequest {
            queue_id: 1,
            max_messages: max,
            now_ms: 100,
            visibility_ms: 1,
            receipt_tokens: Vec::new(),
            redrive: None,
            fifo: true,
            send_order: false,
            attempt: None,
        }
    }

    #[test]
    fn groups_in_order_of_their_first_candidate_each_as_far_as_it_goes() {
        let r = req(3);
        let mut w = FifoWalk::new(&r);
        // b1 expired, so group b starts at b2, after a1.
        for (g, seq, exp) in [("b", 1, 50), ("a", 2, 500), ("b", 3, 500), ("a", 4, 500)] {
            w.row(g, seq, 0, exp, 0);
        }
        assert_eq!(w.groups_to_extend(false), []);
        w.close_window();
        assert_eq!(w.take, [2, 4, 3]);
        assert_eq!(w.expired, [1]);
    }

    #[test]
    fn a_full_window_extends_only_the_groups_that_can_still_count() {
        let r = req(4);
        let mut w = FifoWalk::new(&r);
        for (g, seq) in [("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5)] {
            w.row(g, seq, 0, 500, 0);
        }
        assert_eq!(
            w.groups_to_extend(true),
            [("a".into(), 3), ("b".into(), 2), ("c".into(), 1)]
        );
        // a has two more past the window: b can then give at most one.
        w.extra("a", 10, 0, 500);
        w.extra("a", 20, 0, 500);
        assert_eq!(w.room("b"), 0);
        w.extra("b", 30, 0, 500);
        w.close_window();
        assert_eq!(w.take, [1, 10, 20, 2]);
        assert!(w.is_full());
    }

    #[test]
    fn later_windows_skip_the_groups_already_done() {
        let r = req(3);
        let mut w = FifoWalk::new(&r);
        w.row("a", 1, 0, 500, 0);
        w.close_window();
        w.row("a", 7, 0, 500, 0);
        w.row("b", 8, 0, 500, 0);
        w.close_window();
        assert_eq!(w.take, [1, 8]);
    }

    /// Answers `scan`'s reads from `rows` (seq, group), every message visible since 0 and
    /// unexpired; returns the windows' limits it was asked for and the group reads.
    fn drive(scan: &mut FifoScan, rows: &[(i64, &str)]) -> (Vec<i64>, Vec<GroupRead>) {
        let (mut windows, mut groups) = (Vec::new(), Vec::new());
        loop {
            match scan.next() {
                FifoRead::Window { after, limit } => {
                    windows.push(limit);
                    let page: Vec<_> = rows
                        .iter()
                        .filter(|(s, _)| *s > after)
                        .take(limit as usize)
                        .collect();
                    for (seq, g) in &page {
                        scan.window_row(*seq, 0, 500, g, 0);
                    }
                    scan.end_window(page.len());
                }
                FifoRead::Groups(reads) => {
                    for (i, r) in reads.iter().enumerate() {
                        for (seq, _) in rows
                            .iter()
                            .filter(|(s, g)| *g == r.group && *s > r.from && *s < r.head)
                            .take(r.limit as usize)
                        {
                            scan.group_row(i, *seq, 0, 500);
                        }
                    }
                    groups.extend(reads);
                    scan.end_groups();
                }
                FifoRead::Done => return (windows, groups),
            }
        }
    }

    #[test]
    fn windows_double_until_one_comes_back_short() {
        let r = req(1);
        // Group a's first message is hidden: the walk passes all the others over.
        let mut scan = FifoScan::new(&r, HashMap::from([("a".to_owned(), 1)]));
        let rows: Vec<(i64, &str)> = (2..=101).map(|s| (s, "a")).collect();
        let (windows, groups) = drive(&mut scan, &rows);
        assert_eq!(windows, [20, 40, 80]);
        assert!(groups.is_empty());
        assert!(scan.finish().take.is_empty());
    }

    #[test]
    fn a_full_window_reads_the_groups_that_can_still_count_past_it() {
        let r = req(3);
        let mut scan = FifoScan::new(&r, HashMap::new());
        // A window of 28 rows: x, then 27 groups of one message; x goes on far past it.
        let names: Vec<String> = (2..=28).map(|i| format!("g{i}")).collect();
        let mut rows: Vec<(i64, &str)> = vec![(1, "x")];
        rows.extend((2..=28).map(|s| (s, names[s as usize - 2].as_str())));
        rows.extend([(100, "x"), (101, "x"), (102, "x")]);
        let (windows, groups) = drive(&mut scan, &rows);
        assert_eq!(windows, [28]);
        let asked: Vec<(&str, i64, i64)> = groups
            .iter()
            .map(|g| (g.group.as_str(), g.from, g.limit))
            .collect();
        assert_eq!(asked, [("x", 28, 6), ("g2", 28, 5)]);
        assert_eq!(scan.finish().take, [1, 100, 101]);
    }

    /// A deep backlog sent round robin over many groups: every group's next message is
    /// far past the window. Read one group after another while each can still count
    /// (`wants_group`, as the SQLite store reads), the receive reads past the window only
    /// the rows it takes, and takes what reading every listed group to its limit takes.
    #[test]
    fn group_reads_stop_once_the_receive_is_full() {
        let r = req(10);
        let names: Vec<String> = (0..100).map(|g| format!("g{g}")).collect();
        // 50 messages in each of 100 groups, round robin: g0 at 1, 101, 201, ...
        let rows: Vec<(i64, &str)> = (0..5000)
            .map(|i| (i + 1, names[i as usize % 100].as_str()))
            .collect();
        let mut scan = FifoScan::new(&r, HashMap::new());
        let (mut given, mut asked) = (0, 0);
        loop {
            match scan.next() {
                FifoRead::Window { after, limit } => {
                    let page: Vec<_> = rows
                        .iter()
                        .filter(|(s, _)| *s > after)
                        .take(limit as usize)
                        .collect();
                    for (seq, g) in &page {
                        scan.window_row(*seq, 0, 500, g, 0);
                    }
                    scan.end_window(page.len());
                }
                FifoRead::Groups(reads) => {
                    for (i, g) in reads.iter().enumerate() {
                        asked += g.limit;
                        if !scan.wants_group(i) {
                            continue;
                        }
                        for (seq, _) in rows
                            .iter()
                            .filter(|(s, n)| *n == g.group && *s > g.from && *s < g.head)
                            .take(g.limit as usize)
                        {
                            given += 1;
                            scan.group_row(i, *seq, 0, 500);
                            if !scan.wants_group(i) {
                                break;
                            }
                        }
                    }
                    scan.end_groups();
                }
                FifoRead::Done => break,
            }
        }
        // g0's first message in the window, its next 9 through the group index; the 8
        // other groups listed (up to 12 rows each) are not read.
        assert_eq!(given, 9);
        assert!(asked > 50, "{asked}");
        let take = scan.finish().take;
        let mut all = FifoScan::new(&r, HashMap::new());
        drive(&mut all, &rows);
        assert_eq!(take, all.finish().take);
        assert_eq!(take, (0..10).map(|j| 1 + 100 * j).collect::<Vec<i64>>());
    }

    /// AWS's recorded receive: a group never received comes before groups whose
    /// visibility timeouts ran out later, each group still in send order.
    #[test]
    fn groups_come_in_the_order_they_became_visible() {
        let r = req(10);
        let mut w = FifoWalk::new(&r);
        // g1's messages visible again at 50, g2's at 70, g3's since it was sent at 5.
        for (g, seq, visible) in [
            ("g1", 1, 50),
            ("g1", 2, 50),
            ("g1", 3, 10),
            ("g2", 5, 70),
            ("g3", 6, 5),
        ] {
            w.row(g, seq, 1, 500, visible);
        }
        w.close_window();
        assert_eq!(w.take, [6, 1, 2, 3, 5]);
    }
}
