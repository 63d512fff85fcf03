CREATE TABLE "attempt_logs" (
	"run_id" uuid NOT NULL,
	"node_key" text NOT NULL,
	"attempt" integer NOT NULL,
	"seq" integer NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"level" text NOT NULL,
	"msg" text NOT NULL,
	"fields" jsonb,
	"dropped" integer,
	CONSTRAINT "attempt_logs_run_id_node_key_attempt_seq_pk" PRIMARY KEY("run_id","node_key","attempt","seq")
);
--> statement-breakpoint
CREATE TABLE "attempt_logs_archive" (
	"run_id" uuid NOT NULL,
	"node_key" text NOT NULL,
	"attempt" integer NOT NULL,
	"seq" integer NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"level" text NOT NULL,
	"msg" text NOT NULL,
	"fields" jsonb,
	"dropped" integer,
	"archived_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "attempts_archive" (
	"run_id" uuid NOT NULL,
	"node_key" text NOT NULL,
	"n" integer NOT NULL,
	"worker" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	"outcome" text,
	"error" jsonb,
	"abandoned_at" timestamp with time zone,
	"archived_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "node_runs_archive" (
	"run_id" uuid NOT NULL,
	"node_key" text NOT NULL,
	"task" text NOT NULL,
	"queue" text NOT NULL,
	"status" text NOT NULL,
	"deps_remaining" integer NOT NULL,
	"attempt" integer NOT NULL,
	"result" jsonb,
	"error" jsonb,
	"progress" jsonb,
	"reused_from" uuid,
	"next_retry_at" timestamp with time zone,
	"queued_at" timestamp with time zone,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"archived_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "runs_archive" (
	"id" uuid NOT NULL,
	"flow" text NOT NULL,
	"flow_version_id" integer NOT NULL,
	"status" text NOT NULL,
	"trigger" text NOT NULL,
	"payload" jsonb,
	"business_key" text,
	"idempotency_key" text,
	"logical_date" timestamp with time zone,
	"rerun_of" uuid,
	"priority" integer,
	"run_at" timestamp with time zone,
	"nodes_remaining" integer NOT NULL,
	"blocking_failures" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"archived_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "attempt_logs_archive_run" ON "attempt_logs_archive" USING btree ("run_id");--> statement-breakpoint
CREATE INDEX "attempts_archive_run" ON "attempts_archive" USING btree ("run_id");--> statement-breakpoint
CREATE INDEX "node_runs_archive_run" ON "node_runs_archive" USING btree ("run_id");--> statement-breakpoint
CREATE INDEX "runs_archive_id" ON "runs_archive" USING btree ("id");--> statement-breakpoint
CREATE INDEX "runs_archive_flow_created" ON "runs_archive" USING btree ("flow","created_at");--> statement-breakpoint
CREATE INDEX "idempotency_keys_run" ON "idempotency_keys" USING btree ("run_id");--> statement-breakpoint
CREATE INDEX "runs_created" ON "runs" USING btree ("created_at" DESC NULLS LAST);