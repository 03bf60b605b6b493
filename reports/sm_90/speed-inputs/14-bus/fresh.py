# One 4 GiB page-locked buffer copied into fresh (never touched) pageable memory on 1, 8 and 16
# threads, and into memory touched once before; the kernel's transparent huge page settings.
# Call 15 ran `python3 reports/sm_90/speed-inputs/14-bus/fresh.py > $OUT/fresh.txt` alone (fresh.txt).
import time, threading, ctypes, numpy as np, torch
print(open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip(), open("/sys/kernel/mm/transparent_hugepage/defrag").read().strip())
n = 4 << 30
a = torch.empty(n, dtype=torch.uint8, pin_memory=True).numpy(); a.fill(3)
libc = ctypes.CDLL("libc.so.6")
def fresh(advise):
    b = np.empty(n, dtype=np.uint8)
    if advise:
        start = (b.ctypes.data + 4095) // 4096 * 4096
        libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(n - 8192), 14)  # MADV_HUGEPAGE
    return b
def copy(b, k):
    step = n // k
    ts = [threading.Thread(target=np.copyto, args=(b[i*step:(i+1)*step], a[i*step:(i+1)*step])) for i in range(k)]
    t = time.perf_counter(); [x.start() for x in ts]; [x.join() for x in ts]; return time.perf_counter() - t
for advise in (False, True):
    for k in (1, 8, 16):
        for _ in range(2):
            b = fresh(advise); s = copy(b, k); s2 = copy(b, k); del b
            print(f"huge pages advised {advise}, {k} threads: fresh {s:.3f} s ({n/s/1e9:.1f} GB/s), touched {s2:.3f} s ({n/s2/1e9:.1f} GB/s)", flush=True)
