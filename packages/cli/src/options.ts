import { z } from "zod";

/** Connection flags every command shares; environment variables are the defaults. */
export const connectionFlags = z.object({
  storage: z.string().url().optional(),
  redis: z
    .string()
    .refine((url) => /^rediss?\+sentinel:\/\//.test(url) || URL.canParse(url), "a redis://, rediss:// or redis+sentinel:// URL")
    .optional(),
  prefix: z
    .string()
    .min(1)
    .regex(/^(\{[A-Za-z0-9_-]+\})?[A-Za-z0-9_-]*$/, "letters, digits, _ and -, optionally after a {hash tag} (for Redis Cluster)")
    .optional(),
  dataDir: z.string().optional(),
});

export type ConnectionFlags = z.infer<typeof connectionFlags>;

export function parseFlags<S extends z.ZodType>(schema: S, raw: unknown, command: string): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (i) => `--${String(i.path[0] ?? "?").replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: ${i.message}`,
    );
    throw new Error(`ax ${command}: ${problems.join("; ")}`);
  }
  return parsed.data;
}

export const positiveInt = z.coerce.number().int().positive();
