/* A fake NVML (libnvidia-ml.so.1) for the tests: it stands in for NVIDIA's library where no GPU
 * is, so that `rigaudit measure` records GPU facts and its load guard sees GPU processes on any
 * machine. The tests compile it with `gcc -shared -fPIC -o DIR/libnvidia-ml.so.1 nvml.c` and put
 * DIR first in LD_LIBRARY_PATH (engine/src/cuda/nvml.rs loads the library by that name).
 *
 * Signatures and struct layouts follow nvml.h of CUDA 12 and 13 (NVML API 12.x):
 * nvmlMemory_t = {total, free, used} (unsigned long long each); nvmlProcessInfo_t (the v2/v3
 * layout the `_v3` process query fills) = {unsigned int pid, unsigned long long usedGpuMemory,
 * unsigned int gpuInstanceId, unsigned int computeInstanceId}; nvmlReturn_t is an int (0
 * success, 2 invalid argument, 7 insufficient size).
 *
 * It answers from the environment (or the steering file, below):
 *   FAKE_NVML_NAME        the device's name (default "Fake NVML GPU")
 *   FAKE_NVML_DEVICES     how many devices there are (default 1)
 *   FAKE_NVML_PROCESSES   the processes on the GPU, "pid:bytes,pid:bytes" (default none)
 *   FAKE_NVML_THROTTLE    the clocks' throttle reasons, a bit mask (default 0; C notation, 0x4)
 *   FAKE_NVML_SM_MHZ      the SM clock (default 1980)
 *   FAKE_NVML_ENERGY_STEP the energy counter's growth per reading, mJ (default 1500)
 * The energy counter starts at 1000000 mJ and grows by the step at every reading.
 *
 *   FAKE_NVML_STEER       a file read again at every call, lines `FAKE_NVML_X=value`: a name it
 *                         holds answers from there instead of the environment, so a test can put
 *                         a process or a throttle reason on the GPU for a moment inside a try
 *                         (write the file elsewhere and rename it over, so a call never reads
 *                         half of it). A missing file steers nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7

static int device_token;
static unsigned long long energy_mj = 1000000ULL;

/* The setting `name`: from the steering file when it names it (copied into buf), else the
 * environment's; NULL when neither has it. Reentrant: the calls come from two threads. */
static const char *setting(const char *name, char *buf, size_t size) {
    const char *steer = getenv("FAKE_NVML_STEER");
    size_t n = strlen(name);
    FILE *f = (steer && *steer) ? fopen(steer, "r") : NULL;
    if (f) {
        while (fgets(buf, (int)size, f)) {
            if (strncmp(buf, name, n) == 0 && buf[n] == '=') {
                fclose(f);
                buf[strcspn(buf, "\r\n")] = 0;
                return buf + n + 1;
            }
        }
        fclose(f);
    }
    return getenv(name);
}

static unsigned long long env_num(const char *name, unsigned long long dflt) {
    char buf[512];
    const char *v = setting(name, buf, sizeof buf);
    return (v && *v) ? strtoull(v, NULL, 0) : dflt;
}

static nvmlReturn_t copy_text(const char *text, char *buf, unsigned int len) {
    if (!buf || len == 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(text) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(buf, text);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (!device || index >= env_num("FAKE_NVML_DEVICES", 1)) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &device_token;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    const char *v = getenv("FAKE_NVML_NAME");
    (void)device;
    return copy_text(v ? v : "Fake NVML GPU", name, length);
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    return copy_text("999.99-fake", version, length);
}

/* Clock types: 0 graphics, 1 SM, 2 memory. */
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type, unsigned int *clock) {
    (void)device;
    if (!clock || type > 2) return NVML_ERROR_INVALID_ARGUMENT;
    *clock = type == 2 ? 2619 : (unsigned int)env_num("FAKE_NVML_SM_MHZ", 1980);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                      unsigned long long *reasons) {
    (void)device;
    if (!reasons) return NVML_ERROR_INVALID_ARGUMENT;
    *reasons = env_num("FAKE_NVML_THROTTLE", 0);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    (void)device;
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = 80ULL << 30;
    memory->used = 3ULL << 30;
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *milliwatts) {
    (void)device;
    if (!milliwatts) return NVML_ERROR_INVALID_ARGUMENT;
    *milliwatts = 312000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *mj) {
    (void)device;
    if (!mj) return NVML_ERROR_INVALID_ARGUMENT;
    *mj = __atomic_add_fetch(&energy_mj, env_num("FAKE_NVML_ENERGY_STEP", 1500), __ATOMIC_SEQ_CST);
    return NVML_SUCCESS;
}

/* Real NVML: with *count too small (a null array asks for the count) it sets *count to the
 * number of processes and answers INSUFFICIENT_SIZE, or SUCCESS when there are none. */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                                     nvmlProcessInfo_t *infos) {
    nvmlProcessInfo_t found[64];
    unsigned int n = 0;
    char buf[4096];
    const char *v = setting("FAKE_NVML_PROCESSES", buf, sizeof buf);
    (void)device;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    while (v && *v && n < 64) {
        char *end;
        found[n].pid = (unsigned int)strtoul(v, &end, 10);
        found[n].usedGpuMemory = *end == ':' ? strtoull(end + 1, &end, 10) : 0;
        found[n].gpuInstanceId = 0xFFFFFFFFu;
        found[n].computeInstanceId = 0xFFFFFFFFu;
        n++;
        v = strchr(end, ',');
        v = v ? v + 1 : NULL;
    }
    if (!infos || *count < n) {
        *count = n;
        return n == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
    }
    memcpy(infos, found, n * sizeof(nvmlProcessInfo_t));
    *count = n;
    return NVML_SUCCESS;
}
