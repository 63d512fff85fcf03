import type { Lang } from "./i18n";

/**
 * The sentences the API writes in English that the console shows as they are: a run's or node's
 * `waitingFor`, a failed node's `error.notRetried` and a queue's `limited`. In Chinese each known
 * template is written again with the same names, numbers and keys; a sentence none matches (a
 * newer server's) is shown in English, never lost. Where the server writes each:
 *
 * - limits (`describeBlocked`, coordinator/src/limits/gate.ts; labels from worker/src/dispatch/
 *   limit-spec.ts and keyed-admission.ts): "concurrency 2/2", "pool core_db (25/25)",
 *   "pool core_db (2/3, needs 2)", "pool core_db (1/3, 2 kept for a start that needs 2)",
 *   "max_concurrency 10/10", "concurrency key acme (2/2)", "rate limit 5 per 1s",
 *   "rate limit key acme 2 per 1s"; a limit set so that nothing can start (limit-spec.ts).
 * - a run held by its flow (`waitingFor`, store/src/repositories/admission.ts):
 *   "maxConcurrentRuns 2/2", "backfill maxConcurrentRuns 1/1", "backfill cancelled",
 *   "concurrency key acme (2/2)", "admission: a slot is free, …"; "due at <ISO>" is format.ts's.
 * - workers (coordinator/src/waiting-nodes.ts, store/src/repositories/unserved.ts):
 *   "worker slots 10/10 (1 worker)", "no worker serves queue q", "no worker defines task t in queue q",
 *   "no worker serves queue q on Redis prefix "ax"; 1 worker serves it on "axx": …",
 *   "no worker serves task t in queue q yet (live workers run it in p): …", "a coordinator: its job is
 *   not in Redis …" (WAITING_FOR_COORDINATOR);
 *   a pending run says its first held node's reason followed by " (<node key>)".
 * - queues (coordinator/src/queue-overview.ts): "concurrency key: 5 runs waiting on 2 keys (…)",
 *   "rate limit key: 4 runs delayed on 2 keys (…)".
 * - `notRetried` (worker/src/retry-policy.ts, coordinator/src/unserved.ts).
 */

/** "2/3", "2/3, needs 2", "1/3, 2 kept for a start that needs 2": a limit's count in parentheses. */
const COUNT = String.raw`(\d+)/(\d+)(?:, needs (\d+))?(?:, (\d+) kept for a start that needs \d+)?`;

function count(m: string[], at: number): string {
  const [used, capacity, needs, kept] = m.slice(at, at + 4);
  const why = [...(needs ? [`需要 ${needs} 个槽位`] : []), ...(kept ? [`空出的 ${kept} 个留给需要 ${kept} 个槽位的启动`] : [])];
  return [`${used}/${capacity}`, ...why].join("，");
}

const UNITS: Record<string, string> = { ms: "毫秒", s: "秒", m: "分钟", h: "小时", d: "天" };

/** "per 1s" -> "每秒", "per 90s" -> "每 90 秒". */
function per(n: string, unit: string): string {
  const name = UNITS[unit] ?? unit;
  return n === "1" ? `每${name}` : `每 ${n} ${name}`;
}

type Rule = [RegExp, (m: string[]) => string];

const ZH: Rule[] = [
  // Limits, as describeBlocked writes them.
  [new RegExp(`^concurrency key (.+) \\(${COUNT}\\)$`), (m) => `并发键 ${m[1]}（${count(m, 2)}）`],
  [new RegExp(`^pool (.+) \\(${COUNT}\\)$`), (m) => `资源池 ${m[1]}（${count(m, 2)}）`],
  [/^concurrency (\d+)\/(\d+)$/, (m) => `并发 ${m[1]}/${m[2]}`],
  [new RegExp(`^concurrency \\(${COUNT}\\)$`), (m) => `并发（${count(m, 1)}）`],
  [/^max_concurrency (\d+)\/(\d+)$/, (m) => `集群并发 ${m[1]}/${m[2]}（max_concurrency）`],
  [new RegExp(`^max_concurrency \\(${COUNT}\\)$`), (m) => `集群并发 max_concurrency（${count(m, 1)}）`],
  [/^rate limit key (.+) (\d+) per (\d+)(ms|s|m|h|d)$/, (m) => `限流键 ${m[1]}：${per(m[3]!, m[4]!)} ${m[2]} 次`],
  [/^rate limit (\d+) per (\d+)(ms|s|m|h|d)$/, (m) => `限流：${per(m[2]!, m[3]!)} ${m[1]} 次`],
  // Limits set so that nothing can start.
  [
    /^concurrency (.+) lets nothing start: set it to a whole number of at least 1$/,
    (m) => `并发设为 ${m[1]}，任何尝试都无法启动：请设为不小于 1 的整数`,
  ],
  [
    /^rate limit (.+) per (.+) ms lets nothing start: set max to at least 1 and per to at least 1ms$/,
    (m) => `限流设为每 ${m[2]} 毫秒 ${m[1]} 次，任何尝试都无法启动：请把 max 设为至少 1，per 设为至少 1ms`,
  ],
  [/^pool (.+) has no size: set pools\.(.+) in the configuration$/, (m) => `资源池 ${m[1]} 没有设置大小：请在配置中设置 pools.${m[2]}`],
  [/^pool (.+) has (\d+) slots but the task takes (\d+)$/, (m) => `资源池 ${m[1]} 只有 ${m[2]} 个槽位，但任务需要 ${m[3]} 个`],
  // A run held by its flow.
  [/^maxConcurrentRuns (\d+)\/(\d+)$/, (m) => `流程并发运行数 ${m[1]}/${m[2]}（maxConcurrentRuns）`],
  [/^backfill maxConcurrentRuns (\d+)\/(\d+)$/, (m) => `回填并发运行数 ${m[1]}/${m[2]}（maxConcurrentRuns）`],
  [/^backfill cancelled$/, () => "回填已取消"],
  [/^admission: a slot is free, released within about a second$/, () => "准入：已有空位，约一秒内放行"],
  // Workers.
  [/^worker slots (\d+)\/(\d+|\?) \((\d+) workers?\)$/, (m) => `工作进程槽位 ${m[1]}/${m[2]}（${m[3]} 个工作进程）`],
  [
    /^no worker serves task (\S+) in queue (\S+) yet \(live workers run it in (.+)\): restart workers with --queues \S+ to pick up the queue from the configuration$/,
    (m) =>
      `还没有工作进程在队列 ${m[2]} 中处理任务 ${m[1]}（在线工作进程在 ${m[3]} 中运行它）：请用 --queues ${m[2]} 重启工作进程以采用配置中的队列`,
  ],
  [/^no worker defines task (\S+) in queue (\S+)$/, (m) => `没有工作进程定义队列 ${m[2]} 中的任务 ${m[1]}`],
  [
    /^no worker serves queue (\S+) on Redis prefix "([^"]*)"; (\d+) workers? serves? it on (.+): give every process the same --prefix \(AX_PREFIX\)$/,
    (m) =>
      `Redis 前缀 "${m[2]}" 上没有工作进程处理队列 ${m[1]}；${m[3]} 个工作进程在前缀 ${m[4]} 上处理它：请让所有进程使用相同的 --prefix（AX_PREFIX）`,
  ],
  [
    /^a coordinator: its job is not in Redis and no coordinator is running to queue it \(start one: ax coordinator\)$/,
    () => "协调进程：它的任务不在 Redis 中，且没有协调进程在运行来重新入队（请启动一个：ax coordinator）",
  ],
  [/^no worker serves queue (\S+)$/, (m) => `没有工作进程处理队列 ${m[1]}`],
  // Queues held by a limit per key.
  [
    /^concurrency key: (\d+) runs? waiting on (\d+) keys? \(ax queues --keys (.+)\)$/,
    (m) => `并发键：${m[1]} 个运行在 ${m[2]} 个键上等待（ax queues --keys ${m[3]}）`,
  ],
  [
    /^rate limit key: (\d+\+?) runs? delayed on (\d+) keys? \((.+?)(, …)?\)$/,
    (m) => `限流键：${m[1]} 个运行在 ${m[2]} 个键上延迟（${zh(m[3]!) ?? m[3]}${m[4] ? "，…" : ""}）`,
  ],
  // Why a failed attempt was not retried.
  [/^the task threw NonRetryableError$/, () => "任务抛出了 NonRetryableError"],
  [/^a result over maxResultBytes is the same on every attempt$/, () => "返回值超过 maxResultBytes，重试也一样"],
  [/^a value that is not JSON is the same on every attempt$/, () => "值不是 JSON，重试也一样"],
  [/^no retries left \(retries: (\d+)\)$/, (m) => `重试次数已用完（retries: ${m[1]}）`],
  [/^error is in noRetryOn$/, () => "错误在 noRetryOn 中"],
  [/^error is not in retryOn$/, () => "错误不在 retryOn 中"],
  [/^no worker serves its task$/, () => "没有工作进程处理此任务"],
];

/** A known sentence in Chinese, or undefined. */
function zh(text: string): string | undefined {
  for (const [pattern, render] of ZH) {
    const m = pattern.exec(text);
    if (m) return render([...m].map((g) => g ?? ""));
  }
  // A pending run says what holds its first node, with the node's key: "pool core_db (25/25) (load)".
  const held = /^(.+) \(([^()]+)\)$/.exec(text);
  const inner = held && zh(held[1]!);
  return inner ? `${inner}（节点 ${held[2]}）` : undefined;
}

/** `text`, a sentence of the API, in the console's language: unchanged in English or when not recognised. */
export function serverText(text: string, lang: Lang): string {
  return lang === "zh" ? (zh(text) ?? text) : text;
}

/** The English the API wrote, for a tooltip, where the sentence shown is a translation of it. */
export function serverOriginal(text: string, lang: Lang): string | undefined {
  return serverText(text, lang) === text ? undefined : text;
}
