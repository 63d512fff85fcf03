// `node --import <this> fixture.ts`: ax-scheduler is loaded by Node alone, then tsx is registered
// for the fixture, as ax's own loader does for a TypeScript entry. With tsx's hooks in place first,
// every one of ax's ~860 module files goes through them: twice the CPU (1.6 s against 0.8 s per
// process here), and the suite starts dozens of such processes.
await import("ax-scheduler");
const [esm, cjs] = await Promise.all([import("tsx/esm/api"), import("tsx/cjs/api")]);
esm.register();
cjs.register();
