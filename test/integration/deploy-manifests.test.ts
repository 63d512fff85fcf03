import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { DEFAULT_STOP_TIMEOUT_MS } from "@ax/common";
import { parseDuration } from "ax-scheduler";
import { REPO_ROOT } from "../helpers/processes.js";

const DEPLOY = join(REPO_ROOT, "deploy");
/** `ax worker`/`ax coordinator` exit at the latest this long after their stop timeout (EXIT_GRACE_MS in the CLI). */
const EXIT_GRACE_S = 4;

function tool(command: string, args: string[]): { ok: boolean; stdout: string; stderr: string } {
  const result = spawnSync(command, args, { cwd: REPO_ROOT, encoding: "utf8", timeout: 60_000 });
  return { ok: result.status === 0, stdout: result.stdout ?? "", stderr: result.stderr ?? String(result.error ?? "") };
}

/** The stop timeout a role's args give it (`--stop-timeout`), in seconds. */
function stopTimeoutS(args: string[]): number {
  const at = args.indexOf("--stop-timeout");
  return at === -1 ? DEFAULT_STOP_TIMEOUT_MS / 1000 : parseDuration(args[at + 1] as string) / 1000;
}

describe("deploy/docker-compose.yml", () => {
  const compose = tool("docker", ["compose", "version"]);
  if (!compose.ok)
    console.log(`skipping \`docker compose config\`: docker compose is not available here (${compose.stderr.trim().split("\n")[0]})`);

  it.skipIf(!compose.ok)("validates with docker compose config", () => {
    const result = tool("docker", ["compose", "-f", "deploy/docker-compose.yml", "config", "--quiet"]);
    expect(result.stderr).toBe("");
    expect(result.ok).toBe(true);
  });

  const service = z.object({
    image: z.string().optional(),
    command: z.array(z.string()).optional(),
    restart: z.string().optional(),
    ports: z.array(z.string()).optional(),
    container_name: z.string().optional(),
    environment: z.record(z.string(), z.string()).optional(),
    depends_on: z.record(z.string(), z.object({ condition: z.string() })).optional(),
    deploy: z.object({ replicas: z.number() }).optional(),
    stop_grace_period: z.string().optional(),
    volumes: z.array(z.string()).optional(),
  });
  const file = z.object({ services: z.record(z.string(), service) });

  it("has every role: Redis safe for queues, a migration job, two coordinators, scalable workers, the API, Prometheus, Grafana", () => {
    const { services } = file.parse(parse(readFileSync(join(DEPLOY, "docker-compose.yml"), "utf8"), { merge: true }));
    expect(Object.keys(services).sort()).toEqual(
      ["coordinator", "grafana", "migrate", "postgres", "prometheus", "redis", "server", "worker"].sort(),
    );
    const redis = services.redis?.command?.join(" ");
    expect(redis).toMatch(/--appendonly yes/);
    expect(redis).toMatch(/--maxmemory-policy noeviction/);
    expect(services.migrate).toMatchObject({ command: ["migrate"], restart: "no" });
    expect(services.coordinator?.deploy?.replicas).toBe(2);
    for (const role of ["coordinator", "worker", "server"]) {
      const s = services[role]!;
      expect(s.command?.[0]).toBe(role);
      expect(s.depends_on?.migrate?.condition).toBe("service_completed_successfully");
      expect(s.environment?.AX_HEALTH_PORT).toMatch(/^\d+$/);
      expect(parseDuration(s.stop_grace_period ?? "10s") / 1000).toBeGreaterThanOrEqual(
        role === "server" ? EXIT_GRACE_S : stopTimeoutS(s.command ?? []) + EXIT_GRACE_S,
      );
    }
    // `--scale worker=N` needs replicas without a fixed name or host port.
    expect(services.worker?.container_name).toBeUndefined();
    expect(services.worker?.ports).toBeUndefined();
    expect(services.worker?.command).toContain("--metrics-port");
    expect(services.grafana?.volumes?.join(" ")).toMatch(/provisioning.*dashboards/);
    expect(readFileSync(join(DEPLOY, "Dockerfile"), "utf8")).toMatch(/^HEALTHCHECK .*healthcheck\.mjs/m);
    expect(readFileSync(join(DEPLOY, "Dockerfile"), "utf8")).toMatch(/^USER node$/m);
  });
});

const labels = z.record(z.string(), z.string());
const metadata = z.object({ name: z.string().min(1), labels: labels.optional() });
/** Readiness asks /readyz (PostgreSQL and Redis answer), liveness and startup /healthz (the process answers). */
const probe = (path: "/healthz" | "/readyz") =>
  z.object({ httpGet: z.object({ path: z.literal(path), port: z.union([z.string(), z.number()]) }) });
const container = z.object({
  name: z.string(),
  image: z.string().min(1),
  args: z.array(z.string()).min(1),
  ports: z.array(z.object({ name: z.string().optional(), containerPort: z.number() })).optional(),
  readinessProbe: probe("/readyz").optional(),
  livenessProbe: probe("/healthz").optional(),
  startupProbe: probe("/healthz").optional(),
});
const podSpec = z.object({
  containers: z.array(container).length(1),
  terminationGracePeriodSeconds: z.number().optional(),
  restartPolicy: z.string().optional(),
  securityContext: z.object({ runAsNonRoot: z.literal(true) }),
});
const deployment = z.object({
  apiVersion: z.literal("apps/v1"),
  kind: z.literal("Deployment"),
  metadata,
  spec: z.object({
    replicas: z.number().int().positive(),
    selector: z.object({ matchLabels: labels }),
    template: z.object({ metadata: z.object({ labels }), spec: podSpec }),
  }),
});
const job = z.object({
  apiVersion: z.literal("batch/v1"),
  kind: z.literal("Job"),
  metadata,
  spec: z.object({ template: z.object({ spec: podSpec }) }),
});
const pdb = z.object({
  apiVersion: z.literal("policy/v1"),
  kind: z.literal("PodDisruptionBudget"),
  metadata,
  spec: z.object({ selector: z.object({ matchLabels: labels }) }),
});
const hpa = z.object({
  apiVersion: z.literal("autoscaling/v2"),
  kind: z.literal("HorizontalPodAutoscaler"),
  metadata,
  spec: z.object({
    scaleTargetRef: z.object({ apiVersion: z.literal("apps/v1"), kind: z.literal("Deployment"), name: z.string() }),
    minReplicas: z.number().int().positive(),
    maxReplicas: z.number().int().positive(),
    metrics: z.array(z.object({ type: z.literal("External"), external: z.object({ metric: z.object({ name: z.string() }) }) })).min(1),
  }),
});
const service = z.object({
  apiVersion: z.literal("v1"),
  kind: z.literal("Service"),
  metadata,
  spec: z.object({ selector: labels }),
});
const networkPolicy = z.object({
  apiVersion: z.literal("networking.k8s.io/v1"),
  kind: z.literal("NetworkPolicy"),
  metadata,
  spec: z.object({
    podSelector: z.object({ matchLabels: labels }),
    policyTypes: z.array(z.string()),
    ingress: z.array(z.object({ ports: z.array(z.object({ protocol: z.literal("TCP"), port: z.number() })) })),
  }),
});
const anyManifest = z.object({ apiVersion: z.string().min(1), kind: z.string().min(1), metadata });

const matches = (selector: Record<string, string>, target: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => target[k] === v);

/** Checks the manifests that matter for running ax; `source` names the renderer in failures. */
function validate(docs: unknown[], source: string): void {
  const manifests = docs.map((doc) => anyManifest.parse(doc));
  const of = <S extends z.ZodType>(kind: string, schema: S): z.infer<S>[] =>
    docs.filter((_, i) => manifests[i]!.kind === kind).map((doc) => schema.parse(doc));
  const deployments = of("Deployment", deployment);
  expect(deployments.map((d) => d.metadata.name).sort(), source).toEqual(["ax-coordinator", "ax-server", "ax-worker"]);
  for (const d of deployments) {
    const role = d.metadata.name.replace(/^ax-/, "");
    const pod = d.spec.template.spec;
    const c = pod.containers[0]!;
    expect(c.args[0], `${source}: ${d.metadata.name} runs \`ax ${role}\``).toBe(role);
    expect(matches(d.spec.selector.matchLabels, d.spec.template.metadata.labels), `${source}: ${d.metadata.name} selects its pods`).toBe(
      true,
    );
    const portNames = new Set((c.ports ?? []).flatMap((p) => [p.name, p.containerPort]));
    for (const p of [c.readinessProbe, c.livenessProbe]) {
      expect(p, `${source}: ${d.metadata.name} has readiness and liveness probes`).toBeDefined();
      expect(portNames.has(p!.httpGet.port), `${source}: ${d.metadata.name}'s probe port is a container port`).toBe(true);
    }
    if (role !== "server") {
      expect(c.args, `${source}: ${d.metadata.name} serves /healthz on its metrics port`).toContain("--metrics-port");
      expect(pod.terminationGracePeriodSeconds ?? 30, `${source}: ${d.metadata.name} outlives its stop timeout`).toBeGreaterThanOrEqual(
        stopTimeoutS(c.args) + EXIT_GRACE_S,
      );
    }
  }
  const jobs = of("Job", job);
  expect(
    jobs.map((j) => j.spec.template.spec.containers[0]!.args),
    source,
  ).toEqual([["migrate"]]);
  const pdbs = of("PodDisruptionBudget", pdb);
  for (const d of deployments) {
    const covering = pdbs.filter((p) => matches(p.spec.selector.matchLabels, d.spec.template.metadata.labels));
    expect(covering, `${source}: one PodDisruptionBudget covers ${d.metadata.name}`).toHaveLength(1);
  }
  for (const p of pdbs) {
    expect(
      deployments.filter((d) => matches(p.spec.selector.matchLabels, d.spec.template.metadata.labels)),
      `${source}: ${p.metadata.name} selects exactly one role`,
    ).toHaveLength(1);
  }
  const hpas = of("HorizontalPodAutoscaler", hpa);
  expect(
    hpas.map((h) => h.spec.scaleTargetRef.name),
    source,
  ).toEqual(["ax-worker"]);
  const exported = readFileSync(join(REPO_ROOT, "packages/server/src/cluster-metrics.ts"), "utf8");
  for (const h of hpas) {
    for (const m of h.spec.metrics)
      expect(exported, `${source}: ${m.external.metric.name} is exported`).toContain(`name: "${m.external.metric.name}"`);
  }
  // Ingress is denied but for the policies' ports: each pod must get exactly the ports it listens on.
  const policies = of("NetworkPolicy", networkPolicy);
  for (const d of deployments) {
    const podLabels = d.spec.template.metadata.labels;
    const allowed = policies
      .filter((p) => p.spec.policyTypes.includes("Ingress") && matches(p.spec.podSelector.matchLabels, podLabels))
      .flatMap((p) => p.spec.ingress.flatMap((rule) => rule.ports.map((port) => port.port)));
    const listening = (d.spec.template.spec.containers[0]!.ports ?? []).map((p) => p.containerPort);
    expect([...new Set(allowed)].sort(), `${source}: the network policies open ${d.metadata.name}'s ports, and no others`).toEqual(
      [...new Set(listening)].sort(),
    );
  }
  const services = of("Service", service);
  const server = deployments.find((d) => d.metadata.name === "ax-server")!;
  expect(
    services.map((s) => matches(s.spec.selector, server.spec.template.metadata.labels)),
    source,
  ).toEqual([true]);
}

describe("deploy/k8s (kustomize)", () => {
  const kubectl = tool("kubectl", ["version", "--client"]);
  if (!kubectl.ok) console.log(`skipping \`kubectl kustomize\`: kubectl is not available here (${kubectl.stderr.trim().split("\n")[0]})`);

  it.skipIf(!kubectl.ok)("renders with kubectl kustomize and every manifest validates", () => {
    const rendered = tool("kubectl", ["kustomize", "deploy/k8s"]);
    expect(rendered.stderr).toBe("");
    expect(rendered.ok).toBe(true);
    const docs = parseAllDocuments(rendered.stdout).map((d) => d.toJS() as Record<string, unknown>);
    validate(docs, "kubectl kustomize");
    // kustomize's own work: the namespace everywhere, generated connection secret names hashed into the pods.
    for (const doc of docs) {
      const m = anyManifest.parse(doc);
      if (m.kind !== "Namespace") expect((doc.metadata as { namespace?: string }).namespace, m.metadata.name).toBe("ax");
    }
    expect(rendered.stdout).toMatch(/secretRef:\n\s+name: ax-connections-[a-z0-9]{10}/);
  });

  it("the Prometheus Operator component's PodMonitor scrapes every role on a port it names", () => {
    const component = z
      .object({ kind: z.literal("Component"), resources: z.array(z.string()) })
      .parse(parse(readFileSync(join(DEPLOY, "k8s/components/prometheus-operator/kustomization.yaml"), "utf8")));
    const podMonitor = z.object({
      apiVersion: z.literal("monitoring.coreos.com/v1"),
      kind: z.literal("PodMonitor"),
      metadata,
      spec: z.object({
        selector: z.object({ matchLabels: labels }),
        podMetricsEndpoints: z.array(z.object({ port: z.string(), path: z.literal("/metrics") })).length(1),
      }),
    });
    const [monitor] = component.resources.map((file) =>
      podMonitor.parse(parse(readFileSync(join(DEPLOY, "k8s/components/prometheus-operator", file), "utf8"))),
    );
    const port = monitor!.spec.podMetricsEndpoints[0]!.port;
    for (const file of ["coordinator.yaml", "worker.yaml", "server.yaml"]) {
      const [doc] = parseAllDocuments(readFileSync(join(DEPLOY, "k8s", file), "utf8"))
        .map((d) => d.toJS() as { kind?: string })
        .filter((d) => d.kind === "Deployment")
        .map((d) => deployment.parse(d));
      expect(matches(monitor!.spec.selector.matchLabels, doc!.spec.template.metadata.labels), `${file} is selected`).toBe(true);
      const named = doc!.spec.template.spec.containers[0]!.ports?.find((p) => p.name === port);
      expect(named?.containerPort, `${file} names its metrics port "${port}"`).toBe(9464);
      expect(doc!.spec.template.spec.containers[0]!.args, file).toEqual(expect.arrayContaining(["--metrics-port", "9464"]));
    }
  });

  it("the kustomization's resources, read directly, validate", () => {
    const kustomization = z
      .object({ resources: z.array(z.string()).min(1) })
      .parse(parse(readFileSync(join(DEPLOY, "k8s/kustomization.yaml"), "utf8")));
    const docs = kustomization.resources.flatMap((file) =>
      parseAllDocuments(readFileSync(join(DEPLOY, "k8s", file), "utf8")).map((d) => d.toJS() as unknown),
    );
    validate(docs, "resources");
  });
});
