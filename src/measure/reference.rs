//! The machine's speed reference as `measure` records it: the bundled engine's decode kernel
//! ([`rigaudit_engine::reference`]) probed before every counted step, its figures kept in order.
//!
//! A figure recorded by someone else can be forged; `replay` therefore uses the reference only
//! to turn a drift it explains into "inconclusive", never into "reproduced".

use rigaudit_audit::records::speed::{MachineReference, ReferenceSample};
use rigaudit_engine::reference::{kernel_name, probe};

/// The threads the kernel runs on: one per CPU this process may run on (its affinity), not the
/// share a CPU quota leaves it, so that a machine throttled as a whole shows in the figure rather
/// than in a smaller kernel.
pub fn threads() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and sched_getaffinity writes at most its
    // size.
    let n = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            libc::CPU_COUNT(&set) as usize
        } else {
            0
        }
    };
    if n > 0 {
        n
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// The reference's figures of one measurement, filled try by try.
#[derive(Debug, Default)]
pub struct Reference {
    /// Whether it probes (off by default: only a server on this machine is measured by it).
    on: bool,
    /// Whether it probes only before the first counted step (`ab`'s blocks, read between blocks).
    once: bool,
    samples: Vec<ReferenceSample>,
}

impl Reference {
    /// A reference that probes when `on`, else records nothing.
    pub fn new(on: bool) -> Self {
        Reference {
            on,
            once: false,
            samples: Vec::new(),
        }
    }

    /// A reference that probes before the first counted step only (when on).
    pub fn once(on: bool) -> Self {
        Reference {
            once: true,
            ..Reference::new(on)
        }
    }

    /// Probes the machine before the try of `step`, and keeps the figure (when on).
    pub fn sample(&mut self, step: &str) {
        if !self.on || (self.once && !self.samples.is_empty()) {
            return;
        }
        let gbps = probe(threads());
        self.samples.push(ReferenceSample {
            step: step.to_string(),
            gbps: (gbps * 1000.0).round() / 1000.0,
        });
    }

    /// What the result records: the kernel, its threads and every figure.
    pub fn record(&self) -> Option<MachineReference> {
        (!self.samples.is_empty()).then(|| MachineReference {
            kernel: kernel_name(),
            threads: threads() as u32,
            samples: self.samples.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_records_each_step_with_the_kernel_name() {
        let mut off = Reference::default();
        off.sample("decode/code/1");
        assert!(off.record().is_none());
        let mut r = Reference::new(true);
        assert!(r.record().is_none());
        r.sample("decode/code/1");
        let rec = r.record().unwrap();
        assert!(
            rec.kernel.starts_with("engine-q4_1-matvec-64MiB-v1-"),
            "{}",
            rec.kernel
        );
        assert_eq!(rec.samples.len(), 1);
        assert_eq!(rec.samples[0].step, "decode/code/1");
        let mut once = Reference::once(true);
        once.sample("decode/code/1");
        once.sample("prefill/128/1");
        let rec = once.record().unwrap();
        assert_eq!(rec.samples.len(), 1, "{:?}", rec.samples);
        assert_eq!(rec.samples[0].step, "decode/code/1");
    }
}
