ALTER TABLE "attempts" DROP CONSTRAINT "attempts_run_id_node_key_node_runs_run_id_node_key_fk";
--> statement-breakpoint
ALTER TABLE "node_runs" DROP CONSTRAINT "node_runs_run_id_runs_id_fk";
--> statement-breakpoint
ALTER TABLE "runs" DROP CONSTRAINT "runs_flow_version_id_flow_definitions_id_fk";
