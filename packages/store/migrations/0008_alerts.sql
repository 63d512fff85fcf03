CREATE TABLE "alert_dedupe" (
	"kind" text NOT NULL,
	"flow" text NOT NULL,
	"task" text NOT NULL,
	"fingerprint" text NOT NULL,
	"last_sent_at" timestamp with time zone NOT NULL,
	"suppressed" integer DEFAULT 0 NOT NULL,
	"claim" uuid NOT NULL,
	CONSTRAINT "alert_dedupe_kind_flow_task_fingerprint_pk" PRIMARY KEY("kind","flow","task","fingerprint")
);
--> statement-breakpoint
CREATE TABLE "alert_streaks" (
	"flow" text NOT NULL,
	"task" text NOT NULL,
	"failures" integer NOT NULL,
	"alerted" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "alert_streaks_flow_task_pk" PRIMARY KEY("flow","task")
);
