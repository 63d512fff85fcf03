import pg from "pg";

/**
 * Counts real executions of task bodies in a table of the test's schema, so "exactly once"
 * is checked against PostgreSQL, not against memory of one process.
 */
export class SideEffects {
  private readonly pool: pg.Pool;

  constructor(storage: string) {
    const url = new URL(storage);
    const schema = url.searchParams.get("schema") ?? "public";
    url.searchParams.delete("schema");
    // allowExitOnIdle: a worker process recording effects can still exit once it has stopped.
    this.pool = new pg.Pool({ connectionString: url.toString(), max: 5, options: `-c search_path=${schema}`, allowExitOnIdle: true });
    this.pool.on("error", () => {});
  }

  async init(): Promise<void> {
    await this.pool.query(
      `create table if not exists test_effects (run_id text not null, node text not null, at timestamptz default now())`,
    );
  }

  async record(runId: string, node: string): Promise<void> {
    await this.pool.query(`insert into test_effects (run_id, node) values ($1, $2)`, [runId, node]);
  }

  /** Node executions that happened more or less than once, as `run/node xN`. */
  async countsNotOne(expectedPerRun: number, runIds: string[]): Promise<string[]> {
    const { rows } = await this.pool.query<{ run_id: string; node: string; n: number }>(
      `select run_id, node, count(*)::int as n from test_effects group by run_id, node`,
    );
    const bad = rows.filter((r) => r.n !== 1).map((r) => `${r.run_id}/${r.node} x${r.n}`);
    const perRun = new Map<string, number>();
    for (const r of rows) perRun.set(r.run_id, (perRun.get(r.run_id) ?? 0) + 1);
    for (const id of runIds) if ((perRun.get(id) ?? 0) !== expectedPerRun) bad.push(`${id} ran ${perRun.get(id) ?? 0} nodes`);
    return bad;
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
