CREATE TABLE "backfill_runs" (
	"backfill_id" uuid NOT NULL,
	"run_id" uuid NOT NULL,
	"logical_date" timestamp with time zone NOT NULL,
	CONSTRAINT "backfill_runs_backfill_id_run_id_pk" PRIMARY KEY("backfill_id","run_id")
);
--> statement-breakpoint
CREATE TABLE "backfills" (
	"id" uuid PRIMARY KEY NOT NULL,
	"flow" text NOT NULL,
	"range_from" timestamp with time zone NOT NULL,
	"range_to" timestamp with time zone NOT NULL,
	"max_concurrent_runs" integer NOT NULL,
	"ticks" integer NOT NULL,
	"status" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"cancelled_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "flow_settings" (
	"flow" text PRIMARY KEY NOT NULL,
	"max_concurrent_runs" integer,
	"schedule" jsonb,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "held_runs" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"run_id" uuid NOT NULL,
	"flow" text NOT NULL,
	"backfill_id" uuid
);
--> statement-breakpoint
ALTER TABLE "node_runs" ADD COLUMN "reused_from" uuid;--> statement-breakpoint
ALTER TABLE "backfill_runs" ADD CONSTRAINT "backfill_runs_backfill_id_backfills_id_fk" FOREIGN KEY ("backfill_id") REFERENCES "backfills"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "backfill_runs" ADD CONSTRAINT "backfill_runs_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "held_runs" ADD CONSTRAINT "held_runs_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "backfill_runs_run" ON "backfill_runs" USING btree ("run_id");--> statement-breakpoint
CREATE UNIQUE INDEX "held_runs_run" ON "held_runs" USING btree ("run_id");--> statement-breakpoint
CREATE INDEX "held_runs_flow_seq" ON "held_runs" USING btree ("flow","seq");