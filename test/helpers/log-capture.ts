import { Writable } from "node:stream";

/** A stream that keeps the lines written to it (a pino destination), to check what a process logged. */
export function captured(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  return { stream, lines };
}
