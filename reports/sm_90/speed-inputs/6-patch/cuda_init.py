# What a process pays to open an NVIDIA device, step by step (the floor under each record
# process's start-up): loading libcuda, cuInit, the device's name and memory, its primary
# context retained and made current, and the first allocation. Run alone, then four at once
# (a run's --jobs 4 prestarted processes open their devices side by side).
import ctypes
import sys
import time

marks = [("start", time.perf_counter())]
def mark(name):
    marks.append((name, time.perf_counter()))

cuda = ctypes.CDLL("libcuda.so.1")
mark("dlopen")
assert cuda.cuInit(0) == 0
mark("cuInit")
device = ctypes.c_int()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
name = ctypes.create_string_buffer(256)
cuda.cuDeviceGetName(name, 256, device)
total = ctypes.c_size_t()
cuda.cuDeviceTotalMem_v2(ctypes.byref(total), device)
mark("device")
context = ctypes.c_void_p()
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0
assert cuda.cuCtxSetCurrent(context) == 0
mark("context")
pointer = ctypes.c_uint64()
assert cuda.cuMemAlloc_v2(ctypes.byref(pointer), 1 << 20) == 0
mark("first allocation")
steps = ", ".join(f"{b[0]} {1000 * (b[1] - a[1]):.1f} ms" for a, b in zip(marks, marks[1:]))
print(f"{sys.argv[1] if len(sys.argv) > 1 else 'alone'}: {name.value.decode()}: {steps}; in all {1000 * (marks[-1][1] - marks[0][1]):.1f} ms")
