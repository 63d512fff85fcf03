import { readFileSync } from "node:fs";

/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`) by self time: per package and per
 * function, so "where does ax's time go" has a quick answer without a GUI.
 * Usage: npx tsx test/bench/summarise-profile.ts <file.cpuprofile> [top]
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function packageOf(url: string): string {
  if (!url) return "(native/gc/idle)";
  const pnpm = url.match(/node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (pnpm) return pnpm[1]!;
  const ours = url.match(/\/work\/main\/(packages\/[^/]+|test\/[^/]+|examples\/[^/]+)/);
  if (ours) return ours[1]!;
  if (url.startsWith("node:")) return "node core";
  return url
    .replace(/^file:\/\//, "")
    .split("/")
    .slice(-2)
    .join("/");
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error("give the .cpuprofile file to summarise");
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

const perPackage = new Map<string, number>();
const perFunction = new Map<string, number>();
for (const [id, us] of selfUs) {
  const frame = byId.get(id)!.callFrame;
  const pkg = packageOf(frame.url);
  perPackage.set(pkg, (perPackage.get(pkg) ?? 0) + us);
  const fn = `${frame.functionName || "(anonymous)"} ${pkg}:${frame.lineNumber + 1}`;
  perFunction.set(fn, (perFunction.get(fn) ?? 0) + us);
}
const top = Number(topArg ?? 25);
const show = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${(us / 1000).toFixed(0).padStart(8)} ms ${((us / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
  }
};
console.log(`total sampled ${(total / 1000).toFixed(0)} ms`);
show("self time by package", perPackage);
show("self time by function", perFunction);
