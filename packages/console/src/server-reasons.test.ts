// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the last test looks for the server's template literals, as its source spells them
import { describe, expect, it } from "vitest";
import admission from "../../store/src/repositories/admission.ts?raw";
import unservedStore from "../../store/src/repositories/unserved.ts?raw";
import durations from "../../common/src/yaml-value.ts?raw";
import gate from "../../coordinator/src/limits/gate.ts?raw";
import queueOverview from "../../coordinator/src/queue-overview.ts?raw";
import unserved from "../../coordinator/src/unserved.ts?raw";
import waitingNodes from "../../coordinator/src/waiting-nodes.ts?raw";
import keyedAdmission from "../../worker/src/dispatch/keyed-admission.ts?raw";
import limitSpec from "../../worker/src/dispatch/limit-spec.ts?raw";
import retryPolicy from "../../worker/src/retry-policy.ts?raw";
import { serverOriginal, serverText } from "./server-reasons";

const zh = (text: string) => serverText(text, "zh");

describe("serverText", () => {
  it("writes the limits a node waits on (describeBlocked) in Chinese", () => {
    expect(zh("concurrency 2/2")).toBe("并发 2/2");
    expect(zh("pool core_db (25/25)")).toBe("资源池 core_db（25/25）");
    expect(zh("pool core_db (2/3, needs 2)")).toBe("资源池 core_db（2/3，需要 2 个槽位）");
    expect(zh("pool core_db (1/3, 2 kept for a start that needs 2)")).toBe("资源池 core_db（1/3，空出的 2 个留给需要 2 个槽位的启动）");
    expect(zh("pool core_db (1/4, needs 3, 3 kept for a start that needs 3)")).toBe(
      "资源池 core_db（1/4，需要 3 个槽位，空出的 3 个留给需要 3 个槽位的启动）",
    );
    expect(zh("concurrency (1/2, 1 kept for a start that needs 1)")).toBe("并发（1/2，空出的 1 个留给需要 1 个槽位的启动）");
    expect(zh("max_concurrency 10/10")).toBe("集群并发 10/10（max_concurrency）");
    expect(zh("max_concurrency (9/10, 1 kept for a start that needs 1)")).toBe(
      "集群并发 max_concurrency（9/10，空出的 1 个留给需要 1 个槽位的启动）",
    );
    expect(zh("concurrency key acme (2/2)")).toBe("并发键 acme（2/2）");
    expect(zh("concurrency key order (12) (1/1)")).toBe("并发键 order (12)（1/1）");
    expect(zh("rate limit 5 per 1s")).toBe("限流：每秒 5 次");
    expect(zh("rate limit 100 per 90s")).toBe("限流：每 90 秒 100 次");
    expect(zh("rate limit 3 per 1500ms")).toBe("限流：每 1500 毫秒 3 次");
    expect(zh("rate limit 10 per 1m")).toBe("限流：每分钟 10 次");
    expect(zh("rate limit 1000 per 2h")).toBe("限流：每 2 小时 1000 次");
    expect(zh("rate limit 1 per 1d")).toBe("限流：每天 1 次");
    expect(zh("rate limit key acme 2 per 1s")).toBe("限流键 acme：每秒 2 次");
  });

  it("writes a limit set so that nothing can start in Chinese", () => {
    expect(zh("concurrency 0 lets nothing start: set it to a whole number of at least 1")).toBe(
      "并发设为 0，任何尝试都无法启动：请设为不小于 1 的整数",
    );
    expect(zh("rate limit 0 per 1000 ms lets nothing start: set max to at least 1 and per to at least 1ms")).toBe(
      "限流设为每 1000 毫秒 0 次，任何尝试都无法启动：请把 max 设为至少 1，per 设为至少 1ms",
    );
    expect(zh("pool core_db has no size: set pools.core_db in the configuration")).toBe(
      "资源池 core_db 没有设置大小：请在配置中设置 pools.core_db",
    );
    expect(zh("pool core_db has 2 slots but the task takes 3")).toBe("资源池 core_db 只有 2 个槽位，但任务需要 3 个");
  });

  it("writes why a run is held by its flow in Chinese", () => {
    expect(zh("maxConcurrentRuns 3/3")).toBe("流程并发运行数 3/3（maxConcurrentRuns）");
    expect(zh("backfill maxConcurrentRuns 1/1")).toBe("回填并发运行数 1/1（maxConcurrentRuns）");
    expect(zh("backfill cancelled")).toBe("回填已取消");
    expect(zh("admission: a slot is free, released within about a second")).toBe("准入：已有空位，约一秒内放行");
  });

  it("writes the workers a node waits for in Chinese", () => {
    expect(zh("worker slots 10/10 (1 worker)")).toBe("工作进程槽位 10/10（1 个工作进程）");
    expect(zh("worker slots 8/? (2 workers)")).toBe("工作进程槽位 8/?（2 个工作进程）");
    expect(zh("no worker serves queue payments")).toBe("没有工作进程处理队列 payments");
    expect(zh("no worker defines task charge_card in queue payments")).toBe("没有工作进程定义队列 payments 中的任务 charge_card");
  });

  it("writes a pending run's reason, its first held node's with the node's key, in Chinese", () => {
    expect(zh("pool core_db (25/25) (sync_stock)")).toBe("资源池 core_db（25/25）（节点 sync_stock）");
    expect(zh("worker slots 10/10 (1 worker) (load)")).toBe("工作进程槽位 10/10（1 个工作进程）（节点 load）");
    expect(zh("concurrency key acme (2/2) (charge)")).toBe("并发键 acme（2/2）（节点 charge）");
    expect(zh("no worker serves queue payments (charge)")).toBe("没有工作进程处理队列 payments（节点 charge）");
    expect(zh("a coordinator: its job is not in Redis and no coordinator is running to queue it (start one: ax coordinator)")).toBe(
      "协调进程：它的任务不在 Redis 中，且没有协调进程在运行来重新入队（请启动一个：ax coordinator）",
    );
    expect(
      zh(
        "no worker serves task charge in queue payments yet (live workers run it in default): restart workers with --queues payments to pick up the queue from the configuration",
      ),
    ).toBe(
      "还没有工作进程在队列 payments 中处理任务 charge（在线工作进程在 default 中运行它）：请用 --queues payments 重启工作进程以采用配置中的队列",
    );
    expect(
      zh(
        'no worker serves queue payments on Redis prefix "ax"; 2 workers serve it on "shop", "ax_old": give every process the same --prefix (AX_PREFIX)',
      ),
    ).toBe(
      'Redis 前缀 "ax" 上没有工作进程处理队列 payments；2 个工作进程在前缀 "shop", "ax_old" 上处理它：请让所有进程使用相同的 --prefix（AX_PREFIX）',
    );
    expect(zh("rate limit 5 per 1s (charge)")).toBe("限流：每秒 5 次（节点 charge）");
  });

  it("writes what holds a queue in Chinese", () => {
    expect(zh("concurrency key: 1 run waiting on 1 key (ax queues --keys charge)")).toBe(
      "并发键：1 个运行在 1 个键上等待（ax queues --keys charge）",
    );
    expect(zh("concurrency key: 5 runs waiting on 2 keys (ax queues --keys charge)")).toBe(
      "并发键：5 个运行在 2 个键上等待（ax queues --keys charge）",
    );
    expect(zh("rate limit key: 4 runs delayed on 2 keys (rate limit key acme 2 per 1s, …)")).toBe(
      "限流键：4 个运行在 2 个键上延迟（限流键 acme：每秒 2 次，…）",
    );
    expect(zh("rate limit key: 1000+ runs delayed on 1 key (rate limit key acme 2 per 1s)")).toBe(
      "限流键：1000+ 个运行在 1 个键上延迟（限流键 acme：每秒 2 次）",
    );
  });

  it("writes why a failed node was not retried in Chinese", () => {
    expect(zh("the task threw NonRetryableError")).toBe("任务抛出了 NonRetryableError");
    expect(zh("a result over maxResultBytes is the same on every attempt")).toBe("返回值超过 maxResultBytes，重试也一样");
    expect(zh("a value that is not JSON is the same on every attempt")).toBe("值不是 JSON，重试也一样");
    expect(zh("no retries left (retries: 3)")).toBe("重试次数已用完（retries: 3）");
    expect(zh("error is in noRetryOn")).toBe("错误在 noRetryOn 中");
    expect(zh("error is not in retryOn")).toBe("错误不在 retryOn 中");
    expect(zh("no worker serves its task")).toBe("没有工作进程处理此任务");
  });

  it("keeps a sentence it does not know, and every sentence in English", () => {
    for (const text of [
      "waiting for the moon",
      "the moon (tonight)",
      "due at 2026-12-01T20:29:23.428Z",
      "no worker serves queue a b",
      "concurrency 2/2 and more",
    ]) {
      expect(zh(text)).toBe(text);
      expect(serverOriginal(text, "zh")).toBeUndefined();
    }
    expect(serverText("pool core_db (25/25)", "en")).toBe("pool core_db (25/25)");
    expect(serverText("no retries left (retries: 3)", "en")).toBe("no retries left (retries: 3)");
    expect(serverOriginal("pool core_db (25/25)", "en")).toBeUndefined();
    expect(serverOriginal("pool core_db (25/25)", "zh")).toBe("pool core_db (25/25)");
  });
});

// The templates above as the server writes them: a change of wording there fails here, so that the
// Chinese console is told of it instead of falling back to English unnoticed.
describe("the server's templates", () => {
  it("are still worded as serverText reads them", () => {
    const templates: [string, string[]][] = [
      [
        gate,
        [
          "`${b.label} ${b.max} per ${durationText(b.perMs)}`",
          "`needs ${b.weight}`",
          "`${b.kept} kept for a start that needs ${b.kept}`",
          "`${b.used}/${b.capacity}`",
          "`${b.label} (${count})` : `${b.label} ${count}`",
        ],
      ],
      // A rate limit's window, as durationText writes it.
      [durations, ['["d", 86_400_000]', "`${ms}ms`"]],
      [
        limitSpec,
        [
          'label: "concurrency"',
          "const label = `pool ${task.pool.name}`",
          'label: "max_concurrency"',
          'label: "rate limit"',
          "`concurrency ${task.concurrency} lets nothing start: set it to a whole number of at least 1`",
          "`rate limit ${task.rateLimit.max} per ${task.rateLimit.perMs} ms lets nothing start: set max to at least 1 and per to at least 1ms`",
          "`${label} has no size: set pools.${task.pool.name} in the configuration`",
          "`${label} has ${size} slots but the task takes ${task.pool.slots}`",
        ],
      ],
      [
        keyedAdmission,
        [
          "label: `concurrency key ${key}`",
          "label: `rate limit key ${key}`",
          "`concurrency key ${key} (${concurrencyKey.max}/${concurrencyKey.max})`",
        ],
      ],
      [
        admission,
        [
          "`due at ${new Date(row.run_at).toISOString()}`",
          "`maxConcurrentRuns ${row.active}/${row.cap}`",
          '"backfill cancelled"',
          "`backfill maxConcurrentRuns ${row.bf_active}/${row.bf_cap}`",
          "`concurrency key ${own?.key} (${holders}/${keyed.max})`",
          '"admission: a slot is free, released within about a second"',
        ],
      ],
      [
        unservedStore,
        [
          '`worker slots ${served.running}/${served.capacity ?? "?"} (${served.workers} worker${served.workers === 1 ? "" : "s"})`',
          '`no worker serves queue ${queue} on Redis prefix "${prefix}"; ${n} worker${n === 1 ? "" : "s"} serve${n === 1 ? "s" : ""} it on ${on}: give every process the same --prefix (AX_PREFIX)`',
          'elsewhere.prefixes.map((p) => `"${p}"`).join(", ")',
        ],
      ],
      [
        waitingNodes,
        [
          "`no worker defines task ${task} in queue ${queue}`",
          "`no worker serves queue ${queue}`",
          "`${held.waitingFor} (${held.key})`",
          '"a coordinator: its job is not in Redis and no coordinator is running to queue it (start one: ax coordinator)"',
          '`no worker serves task ${task} in queue ${queue} yet (live workers run it in ${movedFrom.join(", ")}): restart workers with --queues ${queue} to pick up the queue from the configuration`',
        ],
      ],
      [
        queueOverview,
        [
          '`concurrency key: ${runs} run${runs === 1 ? "" : "s"} waiting on ${keys.length} key${keys.length === 1 ? "" : "s"} (ax queues --keys ${task})`',
          '`rate limit key: ${runs}${ids.length === RATE_SAMPLE ? "+" : ""} run${runs === 1 ? "" : "s"} delayed on ${byKey.size} key${byKey.size === 1 ? "" : "s"} (${busiest}${more})`',
          'byKey.size > 1 ? ", …" : ""',
        ],
      ],
      [
        retryPolicy,
        [
          '"the task threw NonRetryableError"',
          '"a result over maxResultBytes is the same on every attempt"',
          '"a value that is not JSON is the same on every attempt"',
          "`no retries left (retries: ${policy.retries})`",
          '"error is in noRetryOn"',
          '"error is not in retryOn"',
        ],
      ],
      [unserved, ['notRetried: "no worker serves its task"']],
    ];
    for (const [source, wanted] of templates) for (const template of wanted) expect(source).toContain(template);
  });
});
