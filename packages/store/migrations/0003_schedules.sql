CREATE TABLE "schedule_ticks" (
	"flow" text NOT NULL,
	"logical_date" timestamp with time zone NOT NULL,
	"status" text NOT NULL,
	"reason" text,
	"run_id" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "schedule_ticks_flow_logical_date_pk" PRIMARY KEY("flow","logical_date")
);
--> statement-breakpoint
CREATE TABLE "schedules" (
	"flow" text PRIMARY KEY NOT NULL,
	"cron" text NOT NULL,
	"timezone" text NOT NULL,
	"overlap" text NOT NULL,
	"catch_up" text NOT NULL,
	"max_catch_up" integer NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"resumed_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "schedule_ticks_waiting" ON "schedule_ticks" USING btree ("flow") WHERE "schedule_ticks"."status" = 'queued' and "schedule_ticks"."run_id" is null;