/**
 * The README's and docs' samples are part of the contract: every ```ts block compiles with the
 * project's strict settings against the real `ax-scheduler` types, every ```yaml block is a valid
 * runtime.yaml, and every relative link points at a file of this repository.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";
import { parseRuntimeConfig } from "ax-scheduler";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** Not on disk: the samples are compiled from memory, resolving modules as a file in test/ would. */
const SAMPLES_DIR = join(ROOT, "test", "readme-samples");
const PRELUDE = join(SAMPLES_DIR, "prelude.d.ts");

/** What the samples take as given: the user's own types and services. */
const PRELUDE_TEXT = `
interface PaymentEvent { payment_id: string; user_id: string; amount: number }
interface Payment extends PaymentEvent { parsed: boolean }
interface Invoice { invoice_id: string; payment_id: string }
declare class InvoiceApiError extends Error {}
declare const invoiceApi: { create(payment: Payment): Promise<string> };
declare function notify(userId: string, invoiceId: string): Promise<void>;
declare const parsePayment: import("ax-scheduler").Task<[PaymentEvent], Promise<Payment>>;
declare const orderPaymentFlow: import("ax-scheduler").Flow<PaymentEvent>;
`;

interface Block {
  /** `docs/api.md:42`: the file and line of the opening fence. */
  name: string;
  language: string;
  code: string;
  /** Line of the block's first code line in its markdown file. */
  firstLine: number;
}

const MARKDOWN = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

function blocksOf(file: string): Block[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const blocks: Block[] = [];
  for (const match of text.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)) {
    const line = text.slice(0, match.index).split("\n").length;
    blocks.push({ name: `${file}:${line}`, language: match[1]!, code: match[2]!, firstLine: line + 1 });
  }
  return blocks;
}

const blocks = MARKDOWN.flatMap(blocksOf);
const tsBlocks = blocks.filter((b) => b.language === "ts");
const sampleFile = (block: Block) => join(SAMPLES_DIR, `${block.name.replace(/[^A-Za-z0-9]+/g, "_")}.ts`);

function compilerOptions(): ts.CompilerOptions {
  const configFile = join(ROOT, "test", "tsconfig.json");
  const parsed = ts.getParsedCommandLineOfConfigFile(configFile, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  if (!parsed) throw new Error(`cannot read ${configFile}`);
  return { ...parsed.options, noEmit: true };
}

/** One program for every block (each its own module), checked file by file. */
function compileSamples(): Map<string, string[]> {
  const sources = new Map<string, string>([[PRELUDE, PRELUDE_TEXT]]);
  // `export {}` keeps every block a module, so blocks never see each other's declarations.
  for (const block of tsBlocks) sources.set(sampleFile(block), `${block.code}\nexport {};\n`);
  const options = compilerOptions();
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (file, language, ...rest) => {
    const text = sources.get(resolve(file));
    return text === undefined ? getSourceFile.call(host, file, language, ...rest) : ts.createSourceFile(file, text, language, true);
  };
  host.fileExists = (file) => sources.has(resolve(file)) || fileExists.call(host, file);
  host.readFile = (file) => sources.get(resolve(file)) ?? readFile.call(host, file);
  const program = ts.createProgram({ rootNames: [...sources.keys()], options, host });
  const problems = new Map<string, string[]>();
  for (const block of tsBlocks) {
    const source = program.getSourceFile(sampleFile(block))!;
    const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
    problems.set(
      block.name,
      diagnostics.map((d) => {
        const line = d.start === undefined ? "?" : source.getLineAndCharacterOfPosition(d.start).line + block.firstLine;
        return `${block.name.split(":")[0]}:${line}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
      }),
    );
  }
  const prelude = program.getSourceFile(PRELUDE)!;
  problems.set(
    "prelude",
    program.getSemanticDiagnostics(prelude).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n")),
  );
  return problems;
}

describe("the README's and docs' samples", () => {
  let problems: Map<string, string[]>;

  beforeAll(() => {
    problems = compileSamples();
  }, 180_000);

  it("finds the samples", () => {
    expect(tsBlocks.map((b) => b.name)).toContain(tsBlocks.find((b) => b.name.startsWith("README.md"))?.name);
    expect(tsBlocks.length).toBeGreaterThan(5);
    expect(problems.get("prelude")).toEqual([]);
  });

  it.each(tsBlocks.map((b) => [b.name]))("%s type-checks as written", (name) => {
    expect(problems.get(name), `${name} does not compile`).toEqual([]);
  });

  it.each(blocks.filter((b) => b.language === "yaml").map((b) => [b.name, b] as const))("%s is a valid runtime.yaml", (name, block) => {
    expect(() => parseRuntimeConfig(block.code, name)).not.toThrow();
  });

  it("links only to files inside this repository", () => {
    const broken: string[] = [];
    for (const file of MARKDOWN) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:)/.test(target!)) continue;
        const path = resolve(ROOT, dirname(file), target!.split("#")[0]!);
        if (relative(ROOT, path).startsWith("..") || !existsSync(path)) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
