CREATE TABLE "attempts" (
	"run_id" uuid NOT NULL,
	"node_key" text NOT NULL,
	"n" integer NOT NULL,
	"worker" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	"outcome" text,
	"error" jsonb,
	CONSTRAINT "attempts_run_id_node_key_n_pk" PRIMARY KEY("run_id","node_key","n")
);
--> statement-breakpoint
CREATE TABLE "flow_definitions" (
	"id" serial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"version" integer NOT NULL,
	"hash" text NOT NULL,
	"dag" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"flow" text NOT NULL,
	"key" text NOT NULL,
	"run_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "idempotency_keys_flow_key_pk" PRIMARY KEY("flow","key")
);
--> statement-breakpoint
CREATE TABLE "node_runs" (
	"run_id" uuid NOT NULL,
	"node_key" text NOT NULL,
	"task" text NOT NULL,
	"queue" text NOT NULL,
	"status" text NOT NULL,
	"deps_remaining" integer NOT NULL,
	"attempt" integer DEFAULT 0 NOT NULL,
	"result" jsonb,
	"error" jsonb,
	"progress" jsonb,
	"next_retry_at" timestamp with time zone,
	"queued_at" timestamp with time zone,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	CONSTRAINT "node_runs_run_id_node_key_pk" PRIMARY KEY("run_id","node_key")
);
--> statement-breakpoint
CREATE TABLE "once_keys" (
	"key" text PRIMARY KEY NOT NULL,
	"result" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "runs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"flow" text NOT NULL,
	"flow_version_id" integer NOT NULL,
	"status" text NOT NULL,
	"trigger" text NOT NULL,
	"payload" jsonb,
	"business_key" text,
	"idempotency_key" text,
	"logical_date" timestamp with time zone,
	"rerun_of" uuid,
	"nodes_remaining" integer NOT NULL,
	"blocking_failures" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "workers" (
	"id" text PRIMARY KEY NOT NULL,
	"hostname" text NOT NULL,
	"pid" integer NOT NULL,
	"queues" text[] NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "attempts" ADD CONSTRAINT "attempts_run_id_node_key_node_runs_run_id_node_key_fk" FOREIGN KEY ("run_id","node_key") REFERENCES "node_runs"("run_id","node_key") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "node_runs" ADD CONSTRAINT "node_runs_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_flow_version_id_flow_definitions_id_fk" FOREIGN KEY ("flow_version_id") REFERENCES "flow_definitions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "flow_definitions_name_version" ON "flow_definitions" USING btree ("name","version");--> statement-breakpoint
CREATE UNIQUE INDEX "flow_definitions_name_hash" ON "flow_definitions" USING btree ("name","hash");--> statement-breakpoint
CREATE INDEX "node_runs_in_flight" ON "node_runs" USING btree ("status","queued_at") WHERE "node_runs"."status" in ('queued', 'retrying', 'running');--> statement-breakpoint
CREATE INDEX "runs_flow_created" ON "runs" USING btree ("flow","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "runs_status" ON "runs" USING btree ("status");--> statement-breakpoint
CREATE INDEX "runs_business_key" ON "runs" USING btree ("business_key");