//! The step protocol of tensor parallelism on [`GpuForward`] (see [`super::tp`]): rank 0 sends
//! each step's header and inputs before its launches; the other ranks follow in [`GpuForward::follow`]
//! until rank 0 says stop or falls silent. Every wait on a step's collectives is bounded.

use std::time::{Duration, Instant};

use cudarc::driver::sys::{cuStreamQuery, CUresult};

use super::{dev, GpuForward};
use crate::cuda::{guarded, tp};

impl GpuForward {
    /// More than one rank: there are followers to tell each step to.
    fn has_followers(&self) -> bool {
        self.shard.world > 1
    }

    /// Rank 0: broadcasts a header of `kind` (a step of `n` tokens, decode-only or not).
    pub(super) fn send_header(&mut self, kind: i32, n: usize, decode: bool) -> Result<(), String> {
        let (Some(comm), Some(header)) = (&self.comm, self.header.as_mut()) else {
            return Ok(());
        };
        if !self.shard.leads() {
            return Ok(());
        }
        let host = [kind, n as i32, decode as i32];
        self.stream
            .memcpy_htod(&host, header)
            .map_err(dev("copy"))?;
        let at = super::ptr(header, &self.stream);
        comm.broadcast_i32(&[(at, tp::HEADER)], &self.stream)?;
        if kind != tp::STEP {
            // A follower answers a heartbeat at once; one that does not within the silence a
            // follower allows rank 0 is gone.
            self.wait(tp::FOLLOW_SILENCE)?;
        }
        Ok(())
    }

    /// Rank 0, with followers: the step's header, then its token ids, positions and slots (already
    /// uploaded to this rank's buffers).
    pub(super) fn lead_step(&mut self, n: usize, decode: bool) -> Result<(), String> {
        if !self.has_followers() {
            return Ok(());
        }
        self.send_header(tp::STEP, n, decode)?;
        self.broadcast_inputs(n)
    }

    /// The step's inputs from rank 0 to every rank, in one group.
    fn broadcast_inputs(&self, n: usize) -> Result<(), String> {
        let comm = self.comm.as_ref().ok_or("no communicator")?;
        let [.., ids, pos, slots, _] = self.ptrs();
        let bufs = [(ids, n), (pos, n), (slots, n)];
        comm.broadcast_i32(&bufs, &self.stream)
    }

    /// Waits for everything queued on the stream. With followers (or a leader) to wait on, it polls,
    /// so that a peer that is gone ends the wait after `limit` or when NCCL reports it, instead
    /// of blocking forever.
    pub(super) fn wait(&self, limit: Duration) -> Result<(), String> {
        if !self.has_followers() {
            return self.stream.synchronize().map_err(dev("step"));
        }
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            // SAFETY: the stream is live; the query only reads its state.
            match unsafe { cuStreamQuery(self.stream.cu_stream()) } {
                CUresult::CUDA_SUCCESS => return Ok(()),
                CUresult::CUDA_ERROR_NOT_READY => {}
                e => return Err(format!("CUDA step: {e:?}")),
            }
            spins += 1;
            if spins.is_multiple_of(1024) {
                if let Some(comm) = &self.comm {
                    comm.async_error()?;
                }
                if start.elapsed() > limit {
                    return Err(format!(
                        "rank {}: no peer answered for {} s: a rank is gone",
                        self.shard.rank,
                        limit.as_secs()
                    ));
                }
            }
            // Decode steps take about a millisecond: spin through the first, then sleep a little.
            match start.elapsed() < Duration::from_millis(2) {
                true => std::hint::spin_loop(),
                false => std::thread::sleep(Duration::from_micros(50)),
            }
        }
    }

    /// A follower (rank > 0): runs rank 0's steps until it says stop (`Ok`) or falls silent for
    /// [`tp::FOLLOW_SILENCE`] (an error naming it).
    pub fn follow(&mut self) -> Result<(), String> {
        if self.shard.leads() || self.comm.is_none() || self.header.is_none() {
            return Err("only a rank above 0 of a world above one follows".into());
        }
        loop {
            let h = self.next_header()?;
            match h[0] {
                tp::STOP => return Ok(()),
                tp::IDLE => continue,
                _ => self.follow_step(h[1].max(0) as usize, h[2] != 0)?,
            }
        }
    }

    /// A follower: rank 0's next header.
    fn next_header(&mut self) -> Result<Vec<i32>, String> {
        let (Some(comm), Some(header)) = (&self.comm, &self.header) else {
            return Err("no communicator".into());
        };
        let at = super::ptr(header, &self.stream);
        comm.broadcast_i32(&[(at, tp::HEADER)], &self.stream)?;
        self.wait(tp::FOLLOW_SILENCE).map_err(|e| {
            let secs = tp::FOLLOW_SILENCE.as_secs();
            format!("{e} (rank 0 sent no step and no heartbeat for {secs} s)")
        })?;
        let header = self.header.as_ref().ok_or("no header")?;
        self.stream.clone_dtoh(header).map_err(dev("copy back"))
    }

    /// A follower's part of one step of `n` tokens.
    fn follow_step(&mut self, n: usize, decode: bool) -> Result<(), String> {
        self.ensure_bufs(n, 1)?;
        self.broadcast_inputs(n)?;
        let graphed = self.use_graphs && decode && self.via_graph(n)?;
        if !graphed {
            self.enqueue(n, 0)?;
        }
        self.wait(tp::STEP_LIMIT)
    }

    /// Rank 0, with followers: tells them to stop (when the server shuts down).
    pub fn stop_followers(&mut self) -> Result<(), String> {
        match self.has_followers() {
            true => self.send_header(tp::STOP, 0, false),
            false => Ok(()),
        }
    }
}

impl Drop for GpuForward {
    /// Rank 0 going away tells its followers to stop (when it goes away orderly; otherwise they
    /// stop after [`tp::FOLLOW_SILENCE`]).
    fn drop(&mut self) {
        if self.shard.leads() && self.has_followers() {
            let _ = guarded("NCCL", || self.stop_followers());
        }
    }
}
