import { ax, Runtime } from "ax-scheduler";
import pg from "pg";
const schema = "ax_prof_" + Date.now();
const storage = `postgres://postgres@127.0.0.1:5432/test?schema=${schema}`;
const noop = ax.task({ name: "prof_noop" }, () => 1);
const flow = ax.flow({ name: "prof_flow" }, () => {
  noop();
});
const rt = new Runtime({
  storage,
  prefix: schema,
  flows: [flow],
  roles: ["worker", "coordinator"],
  maxConcurrency: 100,
  logLevel: "warn",
  stopOnSignals: false,
});
await rt.start();
const client = rt.client();
const pool = new pg.Pool({ connectionString: "postgres://postgres@127.0.0.1:5432/test" });
async function round(n) {
  const t0 = Date.now();
  for (let i = 0; i < n; i += 500)
    await client.triggerFlows(
      "prof_flow",
      Array.from({ length: 500 }, (_, j) => i + j),
    );
  for (;;) {
    const { rows } = await pool.query(`select count(*)::int as n from "${schema}".runs where status in ('pending','running')`);
    if (rows[0].n === 0) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  return Date.now() - t0;
}
await round(1000);
const cpu0 = process.cpuUsage();
const ms = await round(10000);
const cpu = process.cpuUsage(cpu0);
console.log(
  `10000 runs in ${ms} ms = ${Math.round((10000 / ms) * 1000)}/s; node cpu ${((cpu.user + cpu.system) / 1000 / 10000).toFixed(3)} ms/task`,
);
await rt.stop();
await pool.query(`drop schema "${schema}" cascade`);
await pool.end();
process.exit(0);
