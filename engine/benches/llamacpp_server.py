"""Start llama.cpp's server (PyPI `xllamacpp`) on loopback for comparison.

usage: python3 llamacpp_server.py MODEL PORT PARALLEL CONTEXT THREADS [NAME]
NAME, when given, is the model id the server answers to and lists in /v1/models.
Prints one line `llamacpp listening ADDR` and serves until killed.
"""
import sys
import time

import xllamacpp as xl

model, port, parallel, ctx, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
p = xl.CommonParams()
p.model.path = model
if len(sys.argv) > 6:
    p.model_alias = {sys.argv[6]}
p.n_parallel = parallel
p.n_ctx = ctx * parallel  # llama.cpp splits n_ctx over slots
p.cpuparams.n_threads = threads
p.cpuparams_batch.n_threads = threads
p.hostnames = ["127.0.0.1"]
p.port = port
p.endpoint_metrics = True
p.cont_batching = True
p.warmup = True
srv = xl.Server(p)
print("llamacpp listening", srv.listening_address, flush=True)
while True:
    time.sleep(3600)
