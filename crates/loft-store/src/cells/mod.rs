//! Cells (preview): queues and topics spread over several PostgreSQL databases, each an
//! ordinary [`PgStore`] with Loft's schema, behind one [`Store`].
//!
//! `loft serve` uses a [`CellStore`] only when given more than one database URL; with one
//! it opens a [`PgStore`] as before, and nothing here runs.
//!
//! # Where things live
//!
//! - **Cell numbers** are 1-based, in the order the URLs are given. Each cell records its
//!   number (table `loft_cell`) the first time it opens as a cell, and refuses another
//!   afterwards, so reordered URLs fail at start instead of misrouting.
//! - **Ids carry their cell.** Cell `n`'s id sequences (queues, topics, deliveries,
//!   recorded messages, subscriptions, move tasks, mappings) start at
//!   `(n - 1) << CELL_ID_BITS` ([`CELL_ID_BITS`] = 48), so an id is unique across cells and
//!   `id >> 48` is its cell, with no lookup: a queue id (and so a receipt handle, which
//!   seals the queue id), a topic id, a delivery id. Cell 1's ids are those a one-database
//!   deployment makes, so a database that served alone can become cell 1. Message
//!   sequence numbers are ranged the same way, so no two cells give one number (a message
//!   is still always named with its queue).
//! - **The catalog** (table `loft_cell_catalog`, in cell 1 only) maps each queue's and
//!   topic's store key to its cell. Every node loads it at open and caches it; a name the
//!   cache lacks is read from the catalog, and when the catalog cannot be reached, from
//!   each cell (a cell's tables hold only its own queues and topics, so the answer is
//!   the same). So a catalog outage stops creates (which must place the name in the
//!   catalog first) but not traffic to existing queues. A queue's move ([`moving`])
//!   changes its row; cell 1 notifies `catalog:KEY` on its wake-up channel and every
//!   node drops that key from its cache; a `get_queue` that finds the queue gone from
//!   its cached cell reads the catalog once (a node that missed the notification). A name keeps its catalog row when
//!   its queue or topic is deleted (the deleted-queue hold lives in that cell, and a
//!   re-creation returns there); [`Store::reset`] removes the rows of what it removed.
//! - **Placement**: a new queue goes to the live cell with the fewest queue names in the
//!   catalog, a new topic to the one with the fewest topic names (ties to the lowest
//!   number; a deleted queue's name keeps its row, and so its count), so with no traffic
//!   they spread evenly by count. The choice and the catalog row are one transaction under
//!   an advisory lock in cell 1, so creates arriving together, at one node or at several,
//!   spread too. At open, cell 1's queues and topics that the catalog lacks (a database
//!   that served alone) get their rows. A queue created with a
//!   RedrivePolicy
//!   ([`Store::create_queue_beside`], the dead-letter queue's store key) goes to its
//!   dead-letter queue's cell when that cell is up, so its dead-letter moves are one
//!   transaction there. Adding a cell moves nothing.
//! - **Subscriptions** live in their topic's cell; a subscription ARN's UUID is found by
//!   asking each cell once, then cached (a subscription never moves).
//! - **Move tasks** live in their source queue's cell (a step moves messages and counts
//!   them in one transaction there; messages bound for another cell leave through its
//!   outbox in that transaction). **Event source mappings, platform applications and
//!   endpoints, SMS settings and SMS sandbox numbers** live in cell 1 (they name queues by ARN and hold no
//!   messages). **Deliveries and recorded messages** live in the cell of the publish
//!   that made them.
//!
//! # How each method routes
//!
//! By id (`id >> 48`): every method taking a queue id, topic id or delivery id. By name
//! (catalog): `create_queue`, `get_queue`, `queue_recreate_after`, `create_topic`,
//! `get_topic`, `create_move_task` (its source queue). By subscription UUID: its cell.
//! Merged over every cell: the list and count methods (lists sorted as the trait says;
//! `list_subscriptions(None)` and `list_event_source_mappings` by creation within a cell,
//! cell by cell), `delete_expired` (which also sweeps relayed outbox ids), `reset`,
//! `relay_outbox` (the cells' outboxes in turn), the claims of workers (deliveries, move
//! tasks, replays; each claim asks the cells in turn, starting from a rotating cell, until
//! its limit is met), their releases, `next_delivery_at` (the earliest), and the lookups by
//! move-task handle. Cell 1 only: mappings, platforms, SMS settings and sandbox numbers, the receipt key.
//!
//! # Work that crosses cells
//!
//! Inside a cell every transaction is the cell's own, as on one database: a publish whose
//! queues and deliveries are all in one cell is one transaction there, and writes nothing
//! else. A publish whose copies go to queues of several cells runs in one cell (a FIFO
//! topic's in the topic's; a standard one in its deliveries', else the one holding most
//! of its copies) and carries the other cells' copies through the **outbox**
//! ([`outbox`]): rows written in the publish's transaction, relayed by any node under a
//! lease, inserted in the destination at most once (the destination records each
//! relayed outbox id in the insert's transaction), a FIFO queue's in SequenceNumber
//! order. **Dead-letter moves and message moves** to a queue of another cell go through
//! the same outbox ([`outbox::MovedCopy`]): the source cell's receive (or move, or move
//! task step, which counts its progress in the same transaction) takes the message out
//! of its queue and writes it, whole, as an outbox row, in its one transaction; the
//! relay (at once by the node, else by the workers) stores it once in the destination.
//! A dead letter is stored as the move on one database leaves it (sealed as stored, its
//! attributes, MessageId, receive count, first receive, `dead_letter_source`, group,
//! deduplication id, SequenceNumber); only its seq is the destination cell's. A message
//! move's copy takes its destination's next SequenceNumber when the relay stores it, as
//! the move on one database numbers it. Other work whose transaction would span two
//! cells is **refused** (`InternalError`, logged with the reason), never done in part: a
//! send naming queues of two cells, a publish whose deliveries are in two cells. A
//! replay step whose subscriber's queue is in another cell than its subscription commits
//! in the subscription's cell with those copies in its outbox, as a publish does. A reset runs one transaction per
//! cell.
//!
//! # A cell that is down
//!
//! Each cell's [`PgStore`] bounds its operations and, once its database does not answer,
//! fails them at once with `ServiceUnavailable` until a probe answers again
//! (`crate::postgres::health`). So a request routed to a down cell (by id, by name, by
//! subscription) is answered 503 within 8 s, and the others never wait on it. What merges
//! or iterates cells passes a down cell over instead of failing: the lists and counts
//! answer with the live cells' rows, the workers' claims and `next_delivery_at` skip it,
//! releases and `delete_expired` leave it for later, and placement puts new queues and
//! topics on live cells. A name looked for cell by cell (the catalog unreachable) is
//! answered 503 when no live cell has it and a cell is down.
//!
//! Long-poll wake-ups: each cell's LISTEN connection forwards its queue ids (already
//! global) to one channel; a `-1` (a cell's listener reconnected, or a reset) also drops
//! the catalog cache, which is then read again name by name.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use loft_core::error::{Error, ErrorCode, Result};
use loft_core::model::*;
use loft_core::service::receipt::ReceiptKey;
use loft_core::store::Store;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

pub mod moving;
pub mod outbox;

pub use moving::{MoveOutcome, MoveStatus, MoveStep, MOVE_LEASE_MS};

pub use crate::postgres::CELL_ID_BITS;
use crate::PgStore;

/// A [`Store`] method's future on one cell.
type Ask<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<T>> + Send + 'a>>;

/// The catalog kind of queues.
const QUEUE: &str = "q";
/// The catalog kind of topics.
const TOPIC: &str = "t";

/// One cell's line of `loft cells status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellStatus {
    /// The cell's number, 1-based, in the order of the URLs.
    pub number: u32,
    /// How many queues the cell holds.
    pub queues: u64,
    /// How many topics the cell holds.
    pub topics: u64,
    /// How many messages the cell holds, whatever their state.
    pub messages: u64,
}

/// A [`Store`] over several PostgreSQL databases (cells); see the module documentation
/// for where each row lives and how each method routes.
pub struct CellStore {
    /// The cells, cell 1 (the catalog's) first.
    cells: Vec<Arc<PgStore>>,
    /// The catalog as this node knows it: (kind, store key) to cell index (0-based).
    catalog: Arc<RwLock<HashMap<(&'static str, String), usize>>>,
    /// Subscription UUID to cell index, as found.
    subscriptions: Mutex<HashMap<String, usize>>,
    /// The cell the next claim asks first, so no cell's backlog starves another's.
    next_claim: AtomicUsize,
    /// Every cell's wake-ups, forwarded.
    wakeups: broadcast::Sender<i64>,
    /// Whether a publish relays its outbox rows itself ([`CellStore::relay_at_once`]).
    relay_at_once: AtomicBool,
    forwarders: Vec<JoinHandle<()>>,
}

impl Drop for CellStore {
    fn drop(&mut self) {
        for f in &self.forwarders {
            f.abort();
        }
    }
}

/// `InternalError` for work whose transaction would span cells (logged with `what`).
fn crosses_cells(what: &str) -> Error {
    Error::internal(format!(
        "cells: {what} spans two cells; work across cells is not supported yet"
    ))
}

impl CellStore {
    /// Opens the cells, `cells[0]` being cell 1 (which keeps the catalog): each claims its
    /// number and id range ([`PgStore`] refuses a database that recorded another number),
    /// and the catalog is loaded.
    ///
    /// Errors: no cell given, more cells than ids have room for (65,535), or a cell's
    /// database refuses or is another cell.
    pub async fn open(cells: Vec<PgStore>) -> Result<CellStore, String> {
        if cells.is_empty() || cells.len() >= (1 << (63 - CELL_ID_BITS)) {
            return Err(format!("cells: {} cells given", cells.len()));
        }
        for (i, cell) in cells.iter().enumerate() {
            cell.claim_cell(i as u32 + 1)
                .await
                .map_err(|e| format!("cell {}: {e}", i + 1))?;
        }
        let cells: Vec<Arc<PgStore>> = cells.into_iter().map(Arc::new).collect();
        let catalog = Arc::new(RwLock::new(HashMap::new()));
        let (wakeups, _) = broadcast::channel(4096);
        let forwarders = cells
            .iter()
            .filter_map(|c| c.wakeups())
            .map(|mut rx| {
                let tx = wakeups.clone();
                let catalog = catalog.clone();
                tokio::spawn(async move {
                    loop {
                        match rx.recv().await {
                            Ok(id) => {
                                if id == -1 {
                                    forget(&catalog);
                                }
                                let _ = tx.send(id);
                            }
                            Err(broadcast::error::RecvError::Lagged(_)) => {
                                forget(&catalog);
                                let _ = tx.send(-1);
                            }
                            Err(broadcast::error::RecvError::Closed) => break,
                        }
                    }
                })
            })
            .collect::<Vec<_>>();
        // Cell 1's catalog changes (a queue moved): this node's entry goes, and the next
        // lookup reads the catalog. A listener that reconnected sends -1 on the wake-ups
        // above, which forgets the whole cache.
        let mut forwarders = forwarders;
        {
            let mut rx = cells[0].catalog_changes();
            let catalog = catalog.clone();
            forwarders.push(tokio::spawn(async move {
                loop {
                    match rx.recv().await {
                        Ok(key) => {
                            catalog
                                .write()
                                .unwrap_or_else(|e| e.into_inner())
                                .remove(&(QUEUE, key));
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => forget(&catalog),
                        Err(broadcast::error::RecvError::Closed) => break,
                    }
                }
            }));
        }
        let store = CellStore {
            cells,
            catalog,
            subscriptions: Mutex::default(),
            next_claim: AtomicUsize::new(0),
            wakeups,
            relay_at_once: AtomicBool::new(true),
            forwarders,
        };
        store.cells[0]
            .catalog_adopt()
            .await
            .map_err(|_| "cells: cannot adopt cell 1's names into its catalog".to_owned())?;
        store
            .load_catalog()
            .await
            .map_err(|_| "cells: cannot read the catalog of cell 1".to_owned())?;
        Ok(store)
    }

    /// The cell number this node's catalog cache gives queue `name` (its store key), if
    /// the cache has it: what a lookup uses before it asks the catalog. For operators'
    /// and tests' checks of routing after `loft cells move`.
    pub fn cached_queue_cell(&self, name: &str) -> Option<u32> {
        self.cached(QUEUE, name).map(|i| i as u32 + 1)
    }

    /// The cells, cell 1 first.
    pub fn cells(&self) -> &[Arc<PgStore>] {
        &self.cells
    }

    /// One line per cell: its number, queues, topics and messages.
    ///
    /// Errors: `InternalError` when a cell's database fails.
    pub async fn status(&self) -> Result<Vec<CellStatus>> {
        let mut out = Vec::with_capacity(self.cells.len());
        for (i, cell) in self.cells.iter().enumerate() {
            out.push(CellStatus {
                number: i as u32 + 1,
                queues: cell.count_queues().await?,
                topics: cell.count_topics().await?,
                messages: cell.count_messages().await?,
            });
        }
        Ok(out)
    }

    /// Reads the whole catalog into this node's cache.
    async fn load_catalog(&self) -> Result<()> {
        let rows = self.cells[0].catalog_rows().await?;
        let mut map = self.catalog.write().unwrap_or_else(|e| e.into_inner());
        map.clear();
        for (kind, name, cell) in rows {
            let kind = if kind == QUEUE { QUEUE } else { TOPIC };
            if let Some(index) = self.index_of_number(cell) {
                map.insert((kind, name), index);
            }
        }
        Ok(())
    }

    /// The index (0-based) of cell number `number`, when this store has it.
    fn index_of_number(&self, number: u32) -> Option<usize> {
        let index = (number as usize).checked_sub(1)?;
        (index < self.cells.len()).then_some(index)
    }

    /// The cell of id `id` (a queue's, topic's or delivery's); see
    /// [`CellStore::index_of_id`].
    fn by_id(&self, id: i64) -> Result<&PgStore> {
        Ok(self.cells[self.index_of_id(id)].as_ref())
    }

    /// The index of the cell of id `id`. An id of no cell this store has (negative, or of
    /// a cell past the last) names no row anywhere; it goes to cell 1, whose answer is
    /// that of any missing row.
    fn index_of_id(&self, id: i64) -> usize {
        let index = if id < 0 {
            0
        } else {
            (id >> CELL_ID_BITS) as usize
        };
        if index < self.cells.len() {
            index
        } else {
            0
        }
    }

    /// The cell of `kind` `name`: this node's cache, else the catalog, else (the catalog
    /// unreachable) the cell that has it. `None` when no cell has it.
    async fn by_name(&self, kind: &'static str, name: &str) -> Result<Option<usize>> {
        let cached = self
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(kind, name.to_owned()))
            .copied();
        if cached.is_some() {
            return Ok(cached);
        }
        let found = match self.cells[0].catalog_get(kind, name).await {
            Ok(cell) => cell.and_then(|n| self.index_of_number(n)),
            Err(_) => self.search(kind, name).await?,
        };
        if let Some(index) = found {
            self.remember(kind, name, index);
        }
        Ok(found)
    }

    /// The cell whose tables hold `kind` `name`, asking each.
    /// A cell that is down is passed over; when no live cell has the name, the down
    /// cell's `ServiceUnavailable` is the answer (the name may be there).
    async fn search(&self, kind: &'static str, name: &str) -> Result<Option<usize>> {
        let mut down = None;
        for (i, cell) in self.cells.iter().enumerate() {
            let here = if kind == QUEUE {
                cell.get_queue(name).await.map(|q| q.is_some())
            } else {
                cell.get_topic(name).await.map(|t| t.is_some())
            };
            match here {
                Ok(true) => return Ok(Some(i)),
                Ok(false) => {}
                Err(e) if e.code == ErrorCode::ServiceUnavailable => down = Some(e),
                Err(e) => return Err(e),
            }
        }
        match down {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// The cell this node's cache gives `kind` `name`, if it has one.
    fn cached(&self, kind: &'static str, name: &str) -> Option<usize> {
        self.catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(kind, name.to_owned()))
            .copied()
    }

    fn remember(&self, kind: &'static str, name: &str, index: usize) {
        self.catalog
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert((kind, name.to_owned()), index);
    }

    /// The cell `kind` `name` lives in, placing it when the catalog has no row: on the
    /// live cell with the fewest names of its kind in the catalog (ties to the lowest
    /// number), chosen and recorded in one catalog transaction
    /// ([`PgStore::catalog_place_least`]), so two creates never count the same rows and
    /// two nodes never place one name in two cells.
    async fn place(&self, kind: &'static str, name: &str) -> Result<usize> {
        self.place_near(kind, name, None).await
    }

    /// [`CellStore::place`], placing a new name in cell index `prefer` when given and that
    /// cell is up (it answers its count), else as [`CellStore::place`] does.
    async fn place_near(
        &self,
        kind: &'static str,
        name: &str,
        prefer: Option<usize>,
    ) -> Result<usize> {
        let existing = self.cells[0]
            .catalog_get(kind, name)
            .await?
            .and_then(|n| self.index_of_number(n));
        let index = match existing {
            Some(index) => index,
            None => {
                let preferred = match prefer {
                    Some(i) if i < self.cells.len() => {
                        live(self.cells[i].count_queues().await)?.map(|_| i)
                    }
                    _ => None,
                };
                let number = match preferred {
                    Some(i) => {
                        self.cells[0]
                            .catalog_place(kind, name, i as u32 + 1)
                            .await?
                    }
                    None => {
                        let up = self.live_cells().await?;
                        self.cells[0].catalog_place_least(kind, name, &up).await?
                    }
                };
                self.index_of_number(number).ok_or_else(|| {
                    Error::internal(format!("cells: the catalog places {name} in cell {number}"))
                })?
            }
        };
        self.remember(kind, name, index);
        Ok(index)
    }

    /// The numbers of the cells that are up (each answers a count); a cell that is down
    /// gets no new queue or topic.
    async fn live_cells(&self) -> Result<Vec<u32>> {
        let mut up = Vec::with_capacity(self.cells.len());
        for (i, cell) in self.cells.iter().enumerate() {
            if live(cell.count_topics().await)?.is_some() {
                up.push(i as u32 + 1);
            }
        }
        Ok(up)
    }

    /// The cell of subscription `uuid`, asking each cell once, then remembered.
    async fn by_subscription(&self, uuid: &str) -> Result<Option<usize>> {
        let cached = self
            .subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(uuid)
            .copied();
        if cached.is_some() {
            return Ok(cached);
        }
        for (i, cell) in self.cells.iter().enumerate() {
            if cell.get_subscription(uuid).await?.is_some() {
                self.remember_subscription(uuid, i);
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    fn remember_subscription(&self, uuid: &str, index: usize) {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(uuid.to_owned(), index);
    }

    /// The one cell every queue id of `messages` names, if they name one; `what` names the
    /// work in the refusal.
    fn one_cell<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a i64>,
        what: &str,
    ) -> Result<Option<usize>> {
        let cells: BTreeSet<usize> = ids.into_iter().map(|id| self.index_of_id(*id)).collect();
        match cells.len() {
            0 => Ok(None),
            1 => Ok(cells.into_iter().next()),
            _ => Err(crosses_cells(what)),
        }
    }

    /// The sum of `count` over every cell that is up (a cell that is down counts
    /// nothing: see "A cell that is down" in the module documentation).
    async fn sum<'a>(&'a self, count: impl Fn(&'a PgStore) -> Ask<'a, u64>) -> Result<u64> {
        let mut n = 0;
        for cell in &self.cells {
            n += live(count(cell).await)?.unwrap_or(0);
        }
        Ok(n)
    }

    /// What `list` gives on every cell that is up, cell 1's first.
    async fn gather<'a, T>(
        &'a self,
        list: impl Fn(&'a PgStore) -> Ask<'a, Vec<T>>,
    ) -> Result<Vec<T>> {
        let mut all = Vec::new();
        for cell in &self.cells {
            all.extend(live(list(cell).await)?.unwrap_or_default());
        }
        Ok(all)
    }

    /// Runs `step` on every cell that is up, in turn.
    async fn each<'a>(&'a self, step: impl Fn(&'a PgStore) -> Ask<'a, ()>) -> Result<()> {
        for cell in &self.cells {
            live(step(cell).await)?;
        }
        Ok(())
    }

    /// The cells in the order the next claim asks them.
    fn claim_order(&self) -> Vec<&PgStore> {
        let n = self.cells.len();
        let start = self.next_claim.fetch_add(1, Ordering::Relaxed) % n;
        (0..n)
            .map(|k| self.cells[(start + k) % n].as_ref())
            .collect()
    }
}

/// `Ok(None)` for the `ServiceUnavailable` of a cell that is down (the work that merges
/// or iterates cells passes it over), else `r` itself.
fn live<T>(r: Result<T>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.code == ErrorCode::ServiceUnavailable => Ok(None),
        Err(e) => Err(e),
    }
}

/// Drops this node's catalog cache (it is read again name by name).
fn forget(catalog: &RwLock<HashMap<(&'static str, String), usize>>) {
    catalog.write().unwrap_or_else(|e| e.into_inner()).clear();
}

#[async_trait]
impl Store for CellStore {
    // ----- queues

    async fn create_queue(
        &self,
        name: &str,
        attributes: BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<(QueueRecord, bool)> {
        self.create_queue_beside(name, attributes, tags, now_ms, None)
            .await
    }

    async fn create_queue_beside(
        &self,
        name: &str,
        attributes: BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
        now_ms: i64,
        beside: Option<&str>,
    ) -> Result<(QueueRecord, bool)> {
        // Beside its dead-letter queue when that queue's cell is up, so a dead-letter
        // move is one transaction there; else where `place` puts it.
        let mut prefer = None;
        if let Some(dlq) = beside {
            if let Some(cell) = live(self.by_name(QUEUE, dlq).await)?.flatten() {
                prefer = Some(cell);
            }
        }
        let cell = self.place_near(QUEUE, name, prefer).await?;
        self.cells[cell]
            .create_queue(name, attributes, tags, now_ms)
            .await
    }

    async fn get_queue(&self, name: &str) -> Result<Option<QueueRecord>> {
        let cached = self.cached(QUEUE, name);
        let Some(cell) = self.by_name(QUEUE, name).await? else {
            return Ok(None);
        };
        let found = self.cells[cell].get_queue(name).await?;
        if found.is_none() && cached.is_some() {
            // The cached cell may be stale (the queue moved, `moving`, and this node
            // missed the catalog's notification): the catalog is read once, or (cell 1
            // unreachable) each cell is asked.
            let fresh = match self.cells[0].catalog_get(QUEUE, name).await {
                Ok(number) => number.and_then(|n| self.index_of_number(n)),
                Err(_) => live(self.search(QUEUE, name).await)?.flatten(),
            };
            if let Some(index) = fresh {
                self.remember(QUEUE, name, index);
                if index != cell {
                    return self.cells[index].get_queue(name).await;
                }
            }
        }
        Ok(found)
    }

    async fn list_queues(&self) -> Result<Vec<QueueRecord>> {
        let mut all = self.gather(|c| c.list_queues()).await?;
        all.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(all)
    }

    async fn list_queues_of(&self, prefix: &str, bare: bool) -> Result<Vec<QueueRecord>> {
        let mut all = self.gather(|c| c.list_queues_of(prefix, bare)).await?;
        all.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(all)
    }

    async fn count_queues(&self) -> Result<u64> {
        self.sum(|c| c.count_queues()).await
    }

    async fn count_queues_of(&self, prefix: &str, bare: bool) -> Result<u64> {
        self.sum(|c| c.count_queues_of(prefix, bare)).await
    }

    async fn delete_queue(&self, queue_id: i64, recreate_after_ms: i64) -> Result<bool> {
        self.by_id(queue_id)?
            .delete_queue(queue_id, recreate_after_ms)
            .await
    }

    async fn queue_recreate_after(&self, name: &str) -> Result<Option<i64>> {
        let Some(cell) = self.by_name(QUEUE, name).await? else {
            return Ok(None);
        };
        self.cells[cell].queue_recreate_after(name).await
    }

    async fn set_queue_attributes(
        &self,
        queue_id: i64,
        attributes: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<()> {
        self.by_id(queue_id)?
            .set_queue_attributes(queue_id, attributes, now_ms)
            .await
    }

    async fn set_queue_tags(&self, queue_id: i64, tags: BTreeMap<String, String>) -> Result<()> {
        self.by_id(queue_id)?.set_queue_tags(queue_id, tags).await
    }

    // ----- messages

    async fn send_messages(&self, messages: Vec<(i64, NewMessage)>) -> Result<Vec<SentMessage>> {
        let Some(cell) = self.one_cell(messages.iter().map(|(q, _)| q), "a send")? else {
            return Ok(Vec::new());
        };
        self.cells[cell].send_messages(messages).await
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<ReceiveOutcome> {
        // A dead-letter queue of another cell: the source cell's receive moves the
        // messages to its outbox in its transaction (`PgStore` sees the queue's id outside
        // its range); they are relayed at once.
        let cell = self.index_of_id(request.queue_id);
        let elsewhere = request
            .redrive
            .as_ref()
            .is_some_and(|r| self.index_of_id(r.dlq_queue_id) != cell);
        let out = self.cells[cell].receive(request).await?;
        if elsewhere && out.dead_lettered > 0 {
            self.relay_from(cell, out.dead_lettered).await;
        }
        Ok(out)
    }

    async fn fair_groups(&self, queue_id: i64, now_ms: i64) -> Result<Option<Vec<GroupCounts>>> {
        self.by_id(queue_id)?.fair_groups(queue_id, now_ms).await
    }

    async fn delete_message(
        &self,
        queue_id: i64,
        seq: i64,
        strict: Option<(i64, i64)>,
    ) -> Result<DeleteOutcome> {
        self.by_id(queue_id)?
            .delete_message(queue_id, seq, strict)
            .await
    }

    async fn delete_messages(
        &self,
        queue_id: i64,
        items: Vec<(i64, Option<(i64, i64)>)>,
    ) -> Result<Vec<DeleteOutcome>> {
        self.by_id(queue_id)?.delete_messages(queue_id, items).await
    }

    async fn delete_message_by_id(&self, queue_id: i64, message_id: &str) -> Result<bool> {
        self.by_id(queue_id)?
            .delete_message_by_id(queue_id, message_id)
            .await
    }

    async fn delete_unnamed_message(&self, queue_id: i64, seq: i64) -> Result<bool> {
        self.by_id(queue_id)?
            .delete_unnamed_message(queue_id, seq)
            .await
    }

    async fn change_visibility(
        &self,
        queue_id: i64,
        seq: i64,
        receipt_token: Option<i64>,
        now_ms: i64,
        visible_at_ms: i64,
        max_hidden_ms: i64,
    ) -> Result<VisibilityChange> {
        self.by_id(queue_id)?
            .change_visibility(
                queue_id,
                seq,
                receipt_token,
                now_ms,
                visible_at_ms,
                max_hidden_ms,
            )
            .await
    }

    async fn move_messages(
        &self,
        source_queue_id: i64,
        target: MoveTarget,
        new_message_ids: Vec<String>,
        now_ms: i64,
        task: Option<MoveTaskLease>,
    ) -> Result<Option<u64>> {
        // Messages bound for queues of other cells leave the source through its outbox,
        // in the move's (or the task step's) transaction, and are relayed at once.
        let cell = self.index_of_id(source_queue_id);
        let foreign = match &target {
            MoveTarget::Queue(id) => self.index_of_id(*id) != cell,
            MoveTarget::Sources(sources) => {
                sources.iter().any(|(_, id)| self.index_of_id(*id) != cell)
            }
        };
        let moved = self.cells[cell]
            .move_messages(source_queue_id, target, new_message_ids, now_ms, task)
            .await?;
        if let (true, Some(n)) = (foreign, moved) {
            if n > 0 {
                self.relay_from(cell, n).await;
            }
        }
        Ok(moved)
    }

    // ----- message-move tasks

    async fn create_move_task(&self, task: MoveTaskRecord) -> Result<bool> {
        let cell = self.by_name(QUEUE, &task.source_queue).await?.unwrap_or(0);
        self.cells[cell].create_move_task(task).await
    }

    async fn list_move_tasks(&self, source_arn: &str, limit: u32) -> Result<Vec<MoveTaskRecord>> {
        // One source queue's tasks are all in its cell.
        for cell in &self.cells {
            let tasks = cell.list_move_tasks(source_arn, limit).await?;
            if !tasks.is_empty() {
                return Ok(tasks);
            }
        }
        Ok(Vec::new())
    }

    async fn cancel_move_task(&self, handle: &str) -> Result<Option<MoveTaskRecord>> {
        for cell in &self.cells {
            if let Some(task) = cell.cancel_move_task(handle).await? {
                return Ok(Some(task));
            }
        }
        Ok(None)
    }

    async fn claim_move_tasks(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<MoveTaskRecord>> {
        let mut out = Vec::new();
        for cell in self.claim_order() {
            let left = limit.saturating_sub(out.len() as u32);
            if left == 0 {
                break;
            }
            out.extend(
                live(
                    cell.claim_move_tasks(owner, now_ms, lease_until_ms, left)
                        .await,
                )?
                .unwrap_or_default(),
            );
        }
        Ok(out)
    }

    async fn finish_move_task(
        &self,
        lease: MoveTaskLease,
        status: MoveTaskStatus,
        failure_reason: Option<String>,
    ) -> Result<bool> {
        for cell in &self.cells {
            if cell
                .finish_move_task(lease.clone(), status, failure_reason.clone())
                .await?
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn release_move_tasks(&self, owner: &str) -> Result<()> {
        self.each(|c| c.release_move_tasks(owner)).await
    }

    async fn purge_queue(
        &self,
        queue_id: i64,
        now_ms: i64,
        next_after_ms: i64,
    ) -> Result<PurgeOutcome> {
        self.by_id(queue_id)?
            .purge_queue(queue_id, now_ms, next_after_ms)
            .await
    }

    async fn queue_counts(&self, queue_id: i64, now_ms: i64) -> Result<QueueCounts> {
        self.by_id(queue_id)?.queue_counts(queue_id, now_ms).await
    }

    async fn count_in_flight(&self, queue_id: i64, now_ms: i64) -> Result<i64> {
        self.by_id(queue_id)?
            .count_in_flight(queue_id, now_ms)
            .await
    }

    async fn oldest_sent_at(&self, queue_id: i64, now_ms: i64) -> Result<Option<i64>> {
        self.by_id(queue_id)?.oldest_sent_at(queue_id, now_ms).await
    }

    async fn peek_messages(
        &self,
        queue_id: i64,
        after_seq: i64,
        limit: u32,
        now_ms: i64,
    ) -> Result<Vec<StoredMessage>> {
        self.by_id(queue_id)?
            .peek_messages(queue_id, after_seq, limit, now_ms)
            .await
    }

    async fn delete_expired(&self, now_ms: i64) -> Result<u64> {
        let n = self.sum(|c| c.delete_expired(now_ms)).await?;
        self.sweep_relayed(now_ms).await;
        Ok(n)
    }

    // ----- topics and subscriptions

    async fn create_topic(
        &self,
        name: &str,
        attributes: BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<(TopicRecord, bool)> {
        let cell = self.place(TOPIC, name).await?;
        self.cells[cell]
            .create_topic(name, attributes, tags, now_ms)
            .await
    }

    async fn get_topic(&self, name: &str) -> Result<Option<TopicRecord>> {
        let Some(cell) = self.by_name(TOPIC, name).await? else {
            return Ok(None);
        };
        self.cells[cell].get_topic(name).await
    }

    async fn list_topics(&self) -> Result<Vec<TopicRecord>> {
        let mut all = self.gather(|c| c.list_topics()).await?;
        all.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(all)
    }

    async fn list_topics_of(&self, prefix: &str, bare: bool) -> Result<Vec<TopicRecord>> {
        let mut all = self.gather(|c| c.list_topics_of(prefix, bare)).await?;
        all.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(all)
    }

    async fn count_topics(&self) -> Result<u64> {
        self.sum(|c| c.count_topics()).await
    }

    async fn count_topics_of(&self, prefix: &str, bare: bool) -> Result<u64> {
        self.sum(|c| c.count_topics_of(prefix, bare)).await
    }

    async fn delete_topic(&self, topic_id: i64) -> Result<bool> {
        self.by_id(topic_id)?.delete_topic(topic_id).await
    }

    async fn set_topic_attributes(
        &self,
        topic_id: i64,
        attributes: BTreeMap<String, String>,
    ) -> Result<()> {
        self.by_id(topic_id)?
            .set_topic_attributes(topic_id, attributes)
            .await
    }

    async fn set_topic_tags(&self, topic_id: i64, tags: BTreeMap<String, String>) -> Result<()> {
        self.by_id(topic_id)?.set_topic_tags(topic_id, tags).await
    }

    async fn create_subscription(
        &self,
        topic_id: i64,
        subscription: NewSubscription,
    ) -> Result<SubscriptionRecord> {
        let record = self
            .by_id(topic_id)?
            .create_subscription(topic_id, subscription)
            .await?;
        self.remember_subscription(&record.uuid, self.index_of_id(topic_id));
        Ok(record)
    }

    async fn publish(
        &self,
        messages: Vec<(i64, NewMessage)>,
        deliveries: Vec<NewDelivery>,
        records: Vec<RecordedMessage>,
    ) -> Result<Vec<SentMessage>> {
        // The publish runs in the cell of its deliveries (their topic's), else in the cell
        // holding most of its copies; copies for other cells go through the outbox.
        let mut home: BTreeSet<usize> = BTreeSet::new();
        for delivery in &deliveries {
            // A subscription deleted meanwhile (`None`): its delivery is dropped at claim
            // time wherever it is written.
            if let Some(cell) = self.by_subscription(&delivery.subscription).await? {
                home.insert(cell);
            }
        }
        if home.len() > 1 {
            return Err(crosses_cells("a publish's deliveries"));
        }
        let mut copies: BTreeMap<usize, usize> = BTreeMap::new();
        for (q, _) in &messages {
            *copies.entry(self.index_of_id(*q)).or_default() += 1;
        }
        let source = match home.first() {
            Some(cell) => *cell,
            None => copies
                .iter()
                .max_by_key(|(cell, n)| (**n, std::cmp::Reverse(**cell)))
                .map_or(0, |(cell, _)| *cell),
        };
        if copies.keys().all(|cell| *cell == source) {
            return self.cells[source]
                .publish(messages, deliveries, records)
                .await;
        }
        self.publish_across(source, messages, deliveries, records)
            .await
    }

    async fn finish_cell_moves(&self, owner: &str, now_ms: i64) -> Result<u64> {
        self.finish_abandoned_moves(owner, now_ms).await
    }

    async fn relay_outbox(&self, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<u64> {
        self.relay_due(now_ms, lease_until_ms, limit).await
    }

    async fn publish_fifo(&self, publish: FifoPublish) -> Result<Option<Vec<FifoPublished>>> {
        // The topic's cell writes the copies for other cells' queues to its outbox,
        // inside its transaction (the fan-out is built there, entry by entry).
        self.publish_fifo_across(publish).await
    }

    async fn archived_messages(
        &self,
        topic_id: i64,
        after_sequence: i64,
        from_ms: i64,
        until_ms: Option<i64>,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<ArchivedMessage>> {
        self.by_id(topic_id)?
            .archived_messages(topic_id, after_sequence, from_ms, until_ms, now_ms, limit)
            .await
    }

    async fn delete_archive(&self, topic_id: i64) -> Result<u64> {
        self.by_id(topic_id)?.delete_archive(topic_id).await
    }

    // ----- message replays

    async fn put_replay(&self, replay: ReplayRecord) -> Result<()> {
        self.remember_subscription(&replay.subscription, self.index_of_id(replay.topic_id));
        self.by_id(replay.topic_id)?.put_replay(replay).await
    }

    async fn get_replay(&self, subscription: &str) -> Result<Option<ReplayRecord>> {
        match self.by_subscription(subscription).await? {
            Some(cell) => self.cells[cell].get_replay(subscription).await,
            None => Ok(None),
        }
    }

    async fn claim_replays(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<ReplayRecord>> {
        let mut out = Vec::new();
        for cell in self.claim_order() {
            let left = limit.saturating_sub(out.len() as u32);
            if left == 0 {
                break;
            }
            out.extend(
                live(
                    cell.claim_replays(owner, now_ms, lease_until_ms, left)
                        .await,
                )?
                .unwrap_or_default(),
            );
        }
        Ok(out)
    }

    async fn advance_replay(&self, step: ReplayStep) -> Result<Option<ReplayRecord>> {
        let Some(cell) = self.by_subscription(&step.subscription).await? else {
            return Ok(None);
        };
        if step
            .messages
            .iter()
            .all(|(q, _)| self.index_of_id(*q) == cell)
        {
            return self.cells[cell].advance_replay(step).await;
        }
        self.advance_replay_across(cell, step).await
    }

    async fn release_replays(&self, owner: &str) -> Result<()> {
        self.each(|c| c.release_replays(owner)).await
    }

    async fn claim_deliveries(
        &self,
        now_ms: i64,
        limit: u32,
        lease_until_ms: i64,
    ) -> Result<Vec<DeliveryRecord>> {
        let mut out = Vec::new();
        for cell in self.claim_order() {
            let left = limit.saturating_sub(out.len() as u32);
            if left == 0 {
                break;
            }
            out.extend(
                live(cell.claim_deliveries(now_ms, left, lease_until_ms).await)?
                    .unwrap_or_default(),
            );
        }
        Ok(out)
    }

    async fn finish_delivery(&self, id: i64) -> Result<()> {
        self.by_id(id)?.finish_delivery(id).await
    }

    async fn retry_delivery(
        &self,
        id: i64,
        attempts: i64,
        next_at_ms: i64,
        error: &str,
    ) -> Result<()> {
        self.by_id(id)?
            .retry_delivery(id, attempts, next_at_ms, error)
            .await
    }

    async fn retry_invocation(
        &self,
        id: i64,
        attempts: i64,
        function_errors: i64,
        next_at_ms: i64,
        error: &str,
    ) -> Result<()> {
        self.by_id(id)?
            .retry_invocation(id, attempts, function_errors, next_at_ms, error)
            .await
    }

    async fn next_delivery_at(&self) -> Result<Option<i64>> {
        let mut next: Option<i64> = None;
        for cell in &self.cells {
            if let Some(at) = live(cell.next_delivery_at().await)?.flatten() {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        Ok(next)
    }

    async fn list_deliveries(
        &self,
        subscription: Option<&str>,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>> {
        if let Some(uuid) = subscription {
            if let Some(cell) = self.by_subscription(uuid).await? {
                return self.cells[cell].list_deliveries(Some(uuid), limit).await;
            }
            // A deleted subscription's deliveries wait in the cell of their publish.
        }
        let mut all = self
            .gather(|c| c.list_deliveries(subscription, limit))
            .await?;
        all.sort_by_key(|d| (d.created_at_ms, d.id));
        all.truncate(limit as usize);
        Ok(all)
    }

    async fn count_deliveries(&self) -> Result<u64> {
        self.sum(|c| c.count_deliveries()).await
    }

    async fn list_recorded(
        &self,
        limit: u32,
        account: Option<String>,
    ) -> Result<Vec<RecordedMessage>> {
        let mut all = self
            .gather(|c| c.list_recorded(limit, account.clone()))
            .await?;
        all.sort_by_key(|r| std::cmp::Reverse((r.created_at_ms, r.id)));
        all.truncate(limit as usize);
        Ok(all)
    }

    async fn delete_recorded(&self, filter: RecordedFilter) -> Result<u64> {
        self.sum(|c| c.delete_recorded(filter.clone())).await
    }

    async fn list_subscriptions(&self, topic_id: Option<i64>) -> Result<Vec<SubscriptionRecord>> {
        if let Some(topic_id) = topic_id {
            return self
                .by_id(topic_id)?
                .list_subscriptions(Some(topic_id))
                .await;
        }
        self.gather(|c| c.list_subscriptions(None)).await
    }

    async fn list_subscriptions_of(
        &self,
        prefix: &str,
        bare: bool,
        subscriber: &str,
    ) -> Result<Vec<SubscriptionRecord>> {
        self.gather(|c| c.list_subscriptions_of(prefix, bare, subscriber))
            .await
    }

    async fn get_subscription(&self, uuid: &str) -> Result<Option<SubscriptionRecord>> {
        match self.by_subscription(uuid).await? {
            Some(cell) => self.cells[cell].get_subscription(uuid).await,
            None => Ok(None),
        }
    }

    async fn update_subscription(
        &self,
        uuid: &str,
        attributes: BTreeMap<String, String>,
        confirmed: bool,
        token: Option<String>,
    ) -> Result<()> {
        match self.by_subscription(uuid).await? {
            Some(cell) => {
                self.cells[cell]
                    .update_subscription(uuid, attributes, confirmed, token)
                    .await
            }
            None => Ok(()),
        }
    }

    async fn delete_subscription(&self, uuid: &str) -> Result<bool> {
        match self.by_subscription(uuid).await? {
            Some(cell) => self.cells[cell].delete_subscription(uuid).await,
            None => Ok(false),
        }
    }

    // ----- mobile push platforms (cell 1)

    async fn create_platform_application(
        &self,
        arn: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<()> {
        self.cells[0]
            .create_platform_application(arn, attributes)
            .await
    }

    async fn create_platform_endpoint(
        &self,
        application_arn: &str,
        arn: &str,
        token: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<Option<String>> {
        self.cells[0]
            .create_platform_endpoint(application_arn, arn, token, attributes)
            .await
    }

    async fn get_platform(&self, arn: &str) -> Result<Option<PlatformRecord>> {
        self.cells[0].get_platform(arn).await
    }

    async fn list_platform_applications(&self) -> Result<Vec<PlatformRecord>> {
        self.cells[0].list_platform_applications().await
    }

    async fn list_platform_endpoints(&self, application_arn: &str) -> Result<Vec<PlatformRecord>> {
        self.cells[0].list_platform_endpoints(application_arn).await
    }

    async fn update_platform_attributes(
        &self,
        arn: &str,
        attributes: BTreeMap<String, String>,
        token: Option<String>,
    ) -> Result<bool> {
        self.cells[0]
            .update_platform_attributes(arn, attributes, token)
            .await
    }

    async fn delete_platform(&self, arn: &str) -> Result<()> {
        self.cells[0].delete_platform(arn).await
    }

    // ----- SMS settings (cell 1)

    async fn sms_attributes(&self, scope: &str) -> Result<BTreeMap<String, String>> {
        self.cells[0].sms_attributes(scope).await
    }

    async fn set_sms_attributes(
        &self,
        scope: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<()> {
        self.cells[0].set_sms_attributes(scope, attributes).await
    }

    async fn sms_sandbox_numbers(&self, scope: &str) -> Result<Vec<SmsSandboxNumber>> {
        self.cells[0].sms_sandbox_numbers(scope).await
    }

    async fn put_sms_sandbox_number(&self, scope: &str, number: SmsSandboxNumber) -> Result<()> {
        self.cells[0].put_sms_sandbox_number(scope, number).await
    }

    async fn delete_sms_sandbox_number(&self, scope: &str, phone_number: &str) -> Result<bool> {
        self.cells[0]
            .delete_sms_sandbox_number(scope, phone_number)
            .await
    }

    // ----- event source mappings (cell 1)

    async fn create_event_source_mapping(
        &self,
        mapping: EventSourceMappingRecord,
    ) -> Result<Option<String>> {
        self.cells[0].create_event_source_mapping(mapping).await
    }

    async fn get_event_source_mapping(
        &self,
        uuid: &str,
    ) -> Result<Option<EventSourceMappingRecord>> {
        self.cells[0].get_event_source_mapping(uuid).await
    }

    async fn list_event_source_mappings(&self) -> Result<Vec<EventSourceMappingRecord>> {
        self.cells[0].list_event_source_mappings().await
    }

    async fn update_event_source_mapping(&self, mapping: EventSourceMappingRecord) -> Result<bool> {
        self.cells[0].update_event_source_mapping(mapping).await
    }

    async fn delete_event_source_mapping(&self, uuid: &str) -> Result<bool> {
        self.cells[0].delete_event_source_mapping(uuid).await
    }

    async fn claim_event_source_mappings(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<EventSourceMappingRecord>> {
        self.cells[0]
            .claim_event_source_mappings(owner, now_ms, lease_until_ms, limit)
            .await
    }

    async fn renew_event_source_mapping(
        &self,
        uuid: &str,
        owner: &str,
        lease_until_ms: i64,
    ) -> Result<Option<EventSourceMappingRecord>> {
        self.cells[0]
            .renew_event_source_mapping(uuid, owner, lease_until_ms)
            .await
    }

    async fn release_event_source_mappings(&self, owner: &str) -> Result<()> {
        self.cells[0].release_event_source_mappings(owner).await
    }

    // ----- reset

    async fn reset(&self, scope: Option<ResetScope>) -> Result<ResetCounts> {
        let mut total = ResetCounts::default();
        for cell in &self.cells {
            let c = cell.reset(scope.clone()).await?;
            total.queues += c.queues;
            total.messages += c.messages;
            total.topics += c.topics;
            total.subscriptions += c.subscriptions;
            total.deliveries += c.deliveries;
            total.mappings += c.mappings;
            total.move_tasks += c.move_tasks;
            total.recordings += c.recordings;
            total.platforms += c.platforms;
            total.queue_ids.extend(c.queue_ids);
        }
        let gone: Vec<(String, String)> = self.cells[0]
            .catalog_rows()
            .await?
            .into_iter()
            .filter(|(_, name, _)| scope.as_ref().is_none_or(|s| s.owns_key(name)))
            .map(|(kind, name, _)| (kind, name))
            .collect();
        self.cells[0].catalog_remove(&gone).await?;
        forget(&self.catalog);
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        Ok(total)
    }

    // ----- receipt handles

    fn receipt_key(&self) -> ReceiptKey {
        self.cells[0].receipt_key()
    }

    // ----- other nodes

    fn wakeups(&self) -> Option<broadcast::Receiver<i64>> {
        Some(self.wakeups.subscribe())
    }
}
