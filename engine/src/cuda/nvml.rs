//! GPU facts through NVML (`libnvidia-ml.so.1`, loaded at run time): device name, driver,
//! clocks, throttle reasons, memory in use, power, the energy counter and the processes on the
//! GPU. `gpu-bench` records them around its decode (energy per token); a first step towards the
//! GPU facts `measure` is to record (issue 29).

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};

use serde_json::{json, Value};

type Device = *mut c_void;

/// NVML's `nvmlMemory_t`.
#[repr(C)]
#[derive(Default)]
struct Memory {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// NVML's `nvmlProcessInfo_t` (the `_v3` process queries).
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct ProcessInfo {
    pid: c_uint,
    used_gpu_memory: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// NVML loaded and initialised, with one device's handle.
pub struct Nvml {
    lib: libloading::Library,
    device: Device,
}

// SAFETY: NVML is thread-safe (nvml.h: "NVML is thread-safe so it is safe to make simultaneous
// NVML calls from multiple threads"); the device handle is an opaque token valid until shutdown.
unsafe impl Send for Nvml {}

const INSUFFICIENT_SIZE: c_int = 7;

impl Nvml {
    /// Loads NVML and opens device `index`, or says why not.
    pub fn open(index: u32) -> Result<Self, String> {
        // SAFETY: loading NVML runs its initialisers, which have no preconditions.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
            .map_err(|e| format!("no NVML (libnvidia-ml.so.1): {e}"))?;
        let mut n = Nvml {
            lib,
            device: std::ptr::null_mut(),
        };
        n.call0("nvmlInit_v2")?;
        let mut dev: Device = std::ptr::null_mut();
        // SAFETY: the symbol has this signature in every NVML since 5.319; `dev` outlives the call.
        let ret = unsafe {
            n.sym::<unsafe extern "C" fn(c_uint, *mut Device) -> c_int>(
                "nvmlDeviceGetHandleByIndex_v2",
            )?(index, &mut dev)
        };
        check("nvmlDeviceGetHandleByIndex_v2", ret)?;
        n.device = dev;
        Ok(n)
    }

    /// The function `name` of NVML with signature `F`.
    ///
    /// # Safety
    /// `F` must be the C signature NVML declares for `name`.
    unsafe fn sym<F: Copy>(&self, name: &str) -> Result<F, String> {
        // SAFETY: the caller names the symbol's true signature.
        unsafe { self.lib.get::<F>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| format!("NVML has no {name}: {e}"))
    }

    fn call0(&self, name: &str) -> Result<(), String> {
        // SAFETY: `nvmlInit_v2` takes nothing and returns nvmlReturn_t.
        let ret = unsafe { self.sym::<unsafe extern "C" fn() -> c_int>(name)?() };
        check(name, ret)
    }

    /// A device query writing one `T` (`name`: `(device, *mut T) -> nvmlReturn_t`).
    fn query<T: Default>(&self, name: &str) -> Result<T, String> {
        let mut v = T::default();
        // SAFETY: every name passed has this signature for its `T`; `v` outlives the call.
        let ret = unsafe {
            self.sym::<unsafe extern "C" fn(Device, *mut T) -> c_int>(name)?(self.device, &mut v)
        };
        check(name, ret).map(|_| v)
    }

    /// The device's name.
    pub fn name(&self) -> Result<String, String> {
        self.text("nvmlDeviceGetName", true)
    }

    /// The driver's version.
    pub fn driver(&self) -> Result<String, String> {
        self.text("nvmlSystemGetDriverVersion", false)
    }

    /// The clocks' throttle reasons now, NVML's bit mask (`nvmlClocksThrottleReason*`).
    pub fn throttle_reasons(&self) -> Result<u64, String> {
        self.query::<c_ulonglong>("nvmlDeviceGetCurrentClocksThrottleReasons")
    }

    /// The device's memory: (total, used) bytes.
    pub fn memory(&self) -> Result<(u64, u64), String> {
        self.query::<Memory>("nvmlDeviceGetMemoryInfo")
            .map(|m| (m.total, m.used))
    }

    /// The power drawn now, W.
    pub fn power_w(&self) -> Result<f64, String> {
        self.query::<c_uint>("nvmlDeviceGetPowerUsage")
            .map(|mw| f64::from(mw) / 1000.0)
    }

    /// A clock in MHz: 0 graphics, 1 SM, 2 memory.
    pub fn clock(&self, kind: c_uint) -> Result<c_uint, String> {
        let mut v: c_uint = 0;
        let name = "nvmlDeviceGetClockInfo";
        // SAFETY: (device, nvmlClockType_t, *mut unsigned int) -> nvmlReturn_t.
        let ret = unsafe {
            self.sym::<unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int>(name)?(
                self.device,
                kind,
                &mut v,
            )
        };
        check(name, ret).map(|_| v)
    }

    /// A string query into a buffer (`name`: `(.., *mut c_char, len)`); device-level when `dev`.
    fn text(&self, name: &str, dev: bool) -> Result<String, String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the two signatures NVML declares for its string queries; the buffer is 256 long.
        let ret = unsafe {
            if dev {
                let f =
                    self.sym::<unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int>(name)?;
                f(self.device, buf.as_mut_ptr(), 256)
            } else {
                let f = self.sym::<unsafe extern "C" fn(*mut c_char, c_uint) -> c_int>(name)?;
                f(buf.as_mut_ptr(), 256)
            }
        };
        check(name, ret)?;
        // SAFETY: NVML writes a NUL-terminated string within the buffer; the last byte stays 0.
        buf[255] = 0;
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// The processes computing on the device: (pid, bytes of GPU memory).
    pub fn processes(&self) -> Result<Vec<(u32, u64)>, String> {
        let name = "nvmlDeviceGetComputeRunningProcesses_v3";
        // SAFETY: (device, *mut unsigned int count, *mut nvmlProcessInfo_t) -> nvmlReturn_t.
        let f = unsafe {
            self.sym::<unsafe extern "C" fn(Device, *mut c_uint, *mut ProcessInfo) -> c_int>(name)?
        };
        let mut count: c_uint = 0;
        // SAFETY: a count of 0 with a null array asks for the count.
        let ret = unsafe { f(self.device, &mut count, std::ptr::null_mut()) };
        if ret != 0 && ret != INSUFFICIENT_SIZE {
            return Err(format!("{name}: NVML error {ret}"));
        }
        let mut infos = vec![ProcessInfo::default(); count as usize + 8];
        let mut count = infos.len() as c_uint;
        // SAFETY: `infos` holds `count` entries.
        check(name, unsafe {
            f(self.device, &mut count, infos.as_mut_ptr())
        })?;
        infos.truncate(count as usize);
        Ok(infos.iter().map(|p| (p.pid, p.used_gpu_memory)).collect())
    }

    /// The energy counter since the driver loaded, in millijoules.
    pub fn energy_mj(&self) -> Result<u64, String> {
        self.query::<c_ulonglong>("nvmlDeviceGetTotalEnergyConsumption")
    }

    /// The facts as JSON: name, driver, clocks (MHz), throttle reasons (bit mask), memory in use,
    /// power (W), energy (J), processes; a fact NVML refuses is its error text.
    pub fn facts(&self) -> Value {
        let or_err = |r: Result<Value, String>| r.unwrap_or_else(Value::String);
        json!({
            "name": or_err(self.name().map(Value::from)),
            "driver": or_err(self.driver().map(Value::from)),
            "clock_sm_mhz": or_err(self.clock(1).map(Value::from)),
            "clock_mem_mhz": or_err(self.clock(2).map(Value::from)),
            "throttle_reasons": or_err(self.throttle_reasons().map(|v| Value::from(format!("{v:#x}")))),
            "memory_used_bytes": or_err(self.memory().map(|(_, used)| Value::from(used))),
            "power_w": or_err(self.power_w().map(Value::from)),
            "energy_j": or_err(self.energy_mj().map(|mj| Value::from(mj as f64 / 1000.0))),
            "processes": or_err(self.processes().map(|p| json!(p))),
        })
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        let _ = self.call0("nvmlShutdown");
    }
}

fn check(name: &str, ret: c_int) -> Result<(), String> {
    match ret {
        0 => Ok(()),
        e => Err(format!("{name}: NVML error {e}")),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn without_a_driver_nvml_is_missing_and_says_which_library() {
        if crate::cuda::load_driver().is_ok() {
            return; // a GPU machine: gpu-bench records the facts there
        }
        let e = super::Nvml::open(0).err().expect("NVML without a driver");
        assert!(e.starts_with("no NVML (libnvidia-ml.so.1)"), "{e}");
    }
}
