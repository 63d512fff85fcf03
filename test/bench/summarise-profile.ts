import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`) by self time, or a `.heapprofile` (from
 * `sample-allocations.cjs`) by bytes allocated: per package and per function, so "where does ax's
 * time go" and "what does it allocate" have quick answers without a GUI.
 * Usage: npx tsx test/bench/summarise-profile.ts <file.cpuprofile|file.heapprofile> [top]
 */
interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame }[];
  samples: number[];
  timeDeltas: number[];
}
interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

const REPO = fileURLToPath(new URL("../../", import.meta.url));

function packageOf(url: string): string {
  if (!url) return "(native/gc/idle)";
  const pnpm = url.match(/node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (pnpm) return pnpm[1]!;
  const file = url.replace(/^file:\/\//, "");
  const ours = file.startsWith(REPO) && file.slice(REPO.length).match(/^(packages\/[^/]+|test\/[^/]+|examples\/[^/]+)/);
  if (ours) return ours[1]!;
  if (url.startsWith("node:")) return "node core";
  return file.split("/").slice(-2).join("/");
}

/** Microseconds of self time per call frame. */
function cpuSelf(profile: CpuProfile): [CallFrame, number][] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return [...selfUs].map(([id, us]) => [byId.get(id)!.callFrame, us]);
}

/** Bytes allocated per call frame (inlined functions count as the function they were inlined into). */
function heapSelf(node: HeapNode, into: [CallFrame, number][] = []): [CallFrame, number][] {
  if (node.selfSize > 0) into.push([node.callFrame, node.selfSize]);
  for (const child of node.children) heapSelf(child, into);
  return into;
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error("give the .cpuprofile or .heapprofile file to summarise");
const parsed = JSON.parse(readFileSync(file, "utf8")) as CpuProfile | { head: HeapNode };
const heap = "head" in parsed;
const entries = heap ? heapSelf(parsed.head) : cpuSelf(parsed);
const total = entries.reduce((sum, [, amount]) => sum + amount, 0);
const perPackage = new Map<string, number>();
const perFunction = new Map<string, number>();
for (const [frame, amount] of entries) {
  const pkg = packageOf(frame.url);
  perPackage.set(pkg, (perPackage.get(pkg) ?? 0) + amount);
  const fn = `${frame.functionName || "(anonymous)"} ${pkg}:${frame.lineNumber + 1}`;
  perFunction.set(fn, (perFunction.get(fn) ?? 0) + amount);
}
const top = Number(topArg ?? 25);
const amountText = (amount: number) =>
  heap ? `${(amount / 1e6).toFixed(1).padStart(8)} MB` : `${(amount / 1000).toFixed(0).padStart(8)} ms`;
const show = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, amount] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${amountText(amount)} ${((amount / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
  }
};
const what = heap ? "allocated" : "self time";
console.log(`total sampled ${amountText(total).trim()}`);
show(`${what} by package`, perPackage);
show(`${what} by function`, perFunction);
