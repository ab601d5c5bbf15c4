//! The global allocator: mimalloc, set up so that the memory a burst of requests took goes
//! back to the system once the burst is over.
//!
//! - mimalloc, because perf showed glibc malloc at about a tenth of the server's CPU under
//!   load.
//! - [`tune`]: mimalloc 3 waits 1 s (`purge_delay`) before it returns freed pages to the
//!   system, and does so only during later allocations, so a server that went idle after
//!   a burst kept it all: 1,000 request bodies of 1 MiB left the resident set at 778 MB.
//!   Purged at once instead, it falls back to about 40 MB
//!   (`bench/hostile burst`, BENCHMARKS.md). On Linux [`tune`] also turns transparent huge
//!   pages off for the process (`prctl(PR_SET_THP_DISABLE)`): mimalloc asks for them on its
//!   arenas (`madvise(MADV_HUGEPAGE)`, from before `main`), so a buffer touched in one place
//!   made the kernel back a whole 2 MiB page, and the same burst peaked at 1.1 GB instead
//!   of 0.42 GB. Loft's heap is small; it has no use for huge pages.
//! - [`collect`], called by each runtime worker thread as it goes idle (at most once per
//!   [`COLLECT_EVERY`]): a block freed by another thread than the one that allocated it
//!   waits in its page until the owner collects, and an idle worker never would.

use std::cell::Cell;
use std::time::{Duration, Instant};

#[cfg(not(feature = "count-allocations"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(feature = "count-allocations")]
#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting(mimalloc::MiMalloc);

/// `mi_option_purge_delay` of mimalloc's `mi_option_e` (`include/mimalloc.h`, 15 in
/// mimalloc 2 and 3); libmimalloc-sys names no constant for it.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Least time between two [`collect`]s on one thread.
pub const COLLECT_EVERY: Duration = Duration::from_millis(10);

/// Sets mimalloc to return freed pages to the system at once (`purge_delay` 0) and, on
/// Linux, turns transparent huge pages off for the process. Call once, first thing in
/// `main`.
pub fn tune() {
    // SAFETY: sets one of mimalloc's integer options; any value is valid.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes an integer flag and touches no memory of ours; a
    // kernel without it answers EINVAL, which changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

thread_local! {
    static LAST_COLLECT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Collects this thread's mimalloc heap (`mi_collect(false)`: blocks other threads freed,
/// empty pages), unless it did within [`COLLECT_EVERY`]. The runtime calls it when a
/// worker thread parks.
pub fn collect() {
    let now = Instant::now();
    LAST_COLLECT.with(|last| {
        if last.get().is_some_and(|t| now - t < COLLECT_EVERY) {
            return;
        }
        last.set(Some(now));
        // SAFETY: mi_collect only touches this thread's heap and the shared arenas.
        unsafe { libmimalloc_sys::mi_collect(false) }
    });
}

/// With the `count-allocations` feature (a measuring build, never the default): the number
/// of allocations (`alloc`, `alloc_zeroed` and `realloc` calls) made since the process
/// started, counted by [`Counting`] around mimalloc. `loft serve` writes it to stderr as it
/// stops (`loft: N allocations since start`), so the allocations of a load are the
/// difference between two runs of different lengths (`bench/floor/allocations`;
/// BENCHMARKS.md, the floor).
#[cfg(feature = "count-allocations")]
pub mod counting {
    use std::alloc::{GlobalAlloc, Layout};
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Allocations so far.
    pub static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

    /// mimalloc, counting each allocation in [`ALLOCATIONS`] (a relaxed atomic add).
    pub struct Counting(pub mimalloc::MiMalloc);

    // SAFETY: every call is passed on unchanged to mimalloc's GlobalAlloc.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            // SAFETY: the caller's contract, passed on.
            unsafe { self.0.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            // SAFETY: as above.
            unsafe { self.0.alloc_zeroed(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: as above.
            unsafe { self.0.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            // SAFETY: as above.
            unsafe { self.0.realloc(ptr, layout, new_size) }
        }
    }

    /// Allocations so far.
    pub fn allocations() -> u64 {
        ALLOCATIONS.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether transparent huge pages are off for this process (`PR_GET_THP_DISABLE`).
    #[cfg(target_os = "linux")]
    fn huge_pages_off() -> bool {
        // SAFETY: reads the process's flag.
        unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1 }
    }

    #[test]
    fn tune_sets_the_purge_delay_and_turns_huge_pages_off() {
        // SAFETY: reads integer options.
        unsafe {
            assert_eq!(
                libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY),
                1000,
                "mimalloc 3's documented default purge_delay is 1000 ms: option 15 is it"
            );
        }
        tune();
        // SAFETY: reads an integer option.
        unsafe { assert_eq!(libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY), 0) };
        #[cfg(target_os = "linux")]
        assert!(huge_pages_off());
        collect();
        collect();
    }
}
