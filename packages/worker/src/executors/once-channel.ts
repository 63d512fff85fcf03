import type { Json } from "@ax/store";
import type { OnceGate, OnceTicket } from "../once-scope.js";
import { reviveError, type ChildMessage, type OnceAnswer, type OnceRequest } from "./protocol.js";
import { AxExecutorError } from "@ax/common";

/** `ax.once` in a thread or process child: each claim, completion and release is a request to the parent. */
export class ParentOnceGate implements OnceGate {
  private readonly pending = new Map<number, (answer: OnceAnswer) => void>();
  private lastId = 0;

  constructor(private readonly send: (message: ChildMessage) => void) {}

  async claim(key: string): Promise<OnceTicket> {
    const answer = await this.ask({ op: "claim", key });
    if (answer.outcome === "done") return { done: true, result: answer.result };
    if (answer.outcome !== "claimed") throw unexpected(answer);
    const { claim } = answer;
    return {
      done: false,
      complete: async (result: Json) => {
        const stored = await this.ask({ op: "complete", claim, result });
        if (stored.outcome !== "done") throw unexpected(stored);
        return stored.result;
      },
      release: async () => {
        await this.ask({ op: "release", claim });
      },
    };
  }

  /** The parent's answer to request `id`. */
  answered(id: number, answer: OnceAnswer): void {
    const resolve = this.pending.get(id);
    this.pending.delete(id);
    resolve?.(answer);
  }

  private async ask(request: OnceRequest): Promise<OnceAnswer> {
    const id = ++this.lastId;
    const answer = await new Promise<OnceAnswer>((resolve) => {
      this.pending.set(id, resolve);
      this.send({ type: "once", id, request });
    });
    if (answer.outcome === "error") throw reviveError(answer.error);
    return answer;
  }
}

function unexpected(answer: OnceAnswer): AxExecutorError {
  return new AxExecutorError(
    `the worker answered an ax.once request with "${answer.outcome}"; the child and its parent run different ax versions`,
  );
}
