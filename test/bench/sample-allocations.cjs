// Preloaded into a process (`node --require`), samples what it allocates from start to exit,
// garbage included: V8's sampling heap profiler otherwise keeps only what is still alive, which
// hides the short-lived objects a task leaves for the young generation's collector. Writes
// <pid>.heapprofile into AX_HEAP_PROFILE_DIR (default: the system's temporary directory).
const inspector = require("node:inspector");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const dir = process.env.AX_HEAP_PROFILE_DIR ?? os.tmpdir();
const session = new inspector.Session();
session.connect();
session.post("HeapProfiler.enable");
session.post("HeapProfiler.startSampling", {
  samplingInterval: 4096,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
// A session on the process's own thread answers synchronously, so this completes inside `exit`.
process.on("exit", () => {
  session.post("HeapProfiler.stopSampling", (error, result) => {
    if (error) process.stderr.write(`allocation sampling failed: ${error.message}\n`);
    else fs.writeFileSync(path.join(dir, `${process.pid}.heapprofile`), JSON.stringify(result.profile));
  });
});
