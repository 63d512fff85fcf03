/** Lets fetch loops sleep until something changes (a slot frees, jobs arrive, a limit frees) or a timeout. */
export class Wakeup {
  private waiters: (() => void)[] = [];

  wait(timeoutMs?: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.waiters.push(done);
      if (timeoutMs !== undefined) timer = setTimeout(done, Math.max(1, timeoutMs));
    });
  }

  notify(): void {
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}
