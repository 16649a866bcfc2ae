//! A small fork-join thread pool whose workers stay alive across steps and spin
//! briefly between jobs (a decode step issues ~150 parallel regions, so waking
//! sleeping threads each time would cost more than the work).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

type Job = *const (dyn Fn(usize, usize) + Sync);

struct Shared {
    job: Mutex<Option<usize>>,
    job_ptr: std::cell::UnsafeCell<Option<Job>>,
    generation: AtomicUsize,
    done: AtomicUsize,
    sleepers: AtomicUsize,
    stop: AtomicBool,
    cv: Condvar,
}

// SAFETY: job_ptr is written only by the owner thread while no worker reads it
// (between generations), and read by workers only after the generation bump
// (Acquire/Release), while the owner keeps the closure alive until all
// workers report done.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

/// Fork-join pool: `run(f)` calls `f(i, n)` once on each of `n` threads
/// (the caller is thread 0) and returns when all are done.
pub struct Pool {
    n: usize,
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
}

const SPIN: usize = 200_000;

impl Pool {
    /// Start a pool of `n` threads in total (including the caller).
    pub fn new(n: usize) -> Self {
        let n = n.max(1);
        let shared = Arc::new(Shared {
            job: Mutex::new(None),
            job_ptr: std::cell::UnsafeCell::new(None),
            generation: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            cv: Condvar::new(),
        });
        let handles = (1..n)
            .map(|i| {
                let s = shared.clone();
                std::thread::Builder::new()
                    .name(format!("engine-worker-{i}"))
                    .spawn(move || worker(s, i, n))
                    .expect("spawn worker thread")
            })
            .collect();
        Pool { n, shared, handles }
    }

    /// Number of threads.
    pub fn threads(&self) -> usize {
        self.n
    }

    /// Run `f(thread_index, n_threads)` on every thread and wait.
    pub fn run(&self, f: &(dyn Fn(usize, usize) + Sync)) {
        if self.n == 1 {
            f(0, 1);
            return;
        }
        let s = &*self.shared;
        // SAFETY: erase the lifetime; we wait below until no worker uses it.
        let ptr: Job = unsafe { std::mem::transmute::<&(dyn Fn(usize, usize) + Sync), Job>(f) };
        unsafe { *s.job_ptr.get() = Some(ptr) };
        s.done.store(0, Ordering::Relaxed);
        s.generation.fetch_add(1, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = s.job.lock().unwrap_or_else(|e| e.into_inner());
            s.cv.notify_all();
        }
        f(0, self.n);
        let mut spins = 0u32;
        while s.done.load(Ordering::Acquire) < self.n - 1 {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(256) {
                // Let a descheduled worker run when cores are oversubscribed.
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

fn worker(s: Arc<Shared>, idx: usize, n: usize) {
    let mut seen = 0usize;
    loop {
        let mut spins = 0usize;
        loop {
            let g = s.generation.load(Ordering::Acquire);
            if g != seen {
                seen = g;
                break;
            }
            if s.stop.load(Ordering::Relaxed) {
                return;
            }
            spins += 1;
            if spins < SPIN {
                if spins.is_multiple_of(256) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            } else {
                s.sleepers.fetch_add(1, Ordering::SeqCst);
                let guard = s.job.lock().unwrap_or_else(|e| e.into_inner());
                if s.generation.load(Ordering::SeqCst) == seen && !s.stop.load(Ordering::Relaxed) {
                    let _ = s.cv.wait_timeout(guard, Duration::from_millis(5));
                }
                s.sleepers.fetch_sub(1, Ordering::SeqCst);
                // Stay in sleep mode until work arrives.
                spins = SPIN;
            }
        }
        // SAFETY: set before the generation bump, alive until done == n-1.
        if let Some(f) = unsafe { *s.job_ptr.get() } {
            unsafe { (*f)(idx, n) };
        }
        s.done.fetch_add(1, Ordering::Release);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        {
            let _g = self.shared.job.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.cv.notify_all();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Split `0..len` into `n` nearly equal ranges aligned to `align`; range `i`.
pub fn split(len: usize, n: usize, i: usize, align: usize) -> std::ops::Range<usize> {
    let units = len.div_ceil(align);
    let per = units / n;
    let rem = units % n;
    let start = i * per + i.min(rem);
    let end = start + per + usize::from(i < rem);
    (start * align).min(len)..(end * align).min(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_runs_every_index_once_per_job() {
        let p = Pool::new(3);
        let hits: Vec<AtomicUsize> = (0..3).map(|_| AtomicUsize::new(0)).collect();
        for _ in 0..1000 {
            p.run(&|i, n| {
                assert_eq!(n, 3);
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
        }
        for h in &hits {
            assert_eq!(h.load(Ordering::Relaxed), 1000);
        }
    }

    #[test]
    fn split_covers_range() {
        let mut covered = 0;
        for i in 0..3 {
            let r = split(100, 3, i, 8);
            assert_eq!(r.start, covered);
            covered = r.end;
        }
        assert_eq!(covered, 100);
    }
}
