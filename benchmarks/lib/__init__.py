"""The benchmarks' shared libraries, imported as ``lib.NAME`` with benchmarks/ on the path (every
runnable experiment in benchmarks/ has it; tests/conftest.py puts it there for the tests):
servers.py starts and stops the servers, proc_cpu.py reads their CPU time, notebook_tools.py
holds the notebook's vegeta and ghz lines, v2_bodies.py builds V2 request bodies,
kyphosis.py the data set the model-file tests and benchmarks train on."""
