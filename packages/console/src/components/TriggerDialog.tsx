import { useState } from "react";
import { api } from "../api";
import { errorText } from "../error-text";
import { useI18n } from "../i18n";
import { Link, navigate } from "../router";
import { JsonEditor, parseJson } from "./JsonEditor";
import { Modal } from "./Status";

export function TriggerDialog({ flow, onClose }: { flow: string; onClose: () => void }) {
  const { t } = useI18n();
  const [payload, setPayload] = useState("{\n  \n}");
  const [businessKey, setBusinessKey] = useState("");
  const [idempotencyKey, setIdempotencyKey] = useState("");
  const [error, setError] = useState<string>();
  // A payload whose idempotency key has a run already starts none: say so, rather than open that run as if it were new.
  const [existing, setExisting] = useState<string>();
  const [busy, setBusy] = useState(false);
  const parsed = parseJson(payload);
  const submit = async () => {
    setBusy(true);
    setError(undefined);
    setExisting(undefined);
    try {
      // A person asked for this run: labelled as the Client labels it, not as an event from a service.
      const body = {
        payload: parsed.value,
        trigger: "manual",
        ...(businessKey ? { businessKey } : {}),
        ...(idempotencyKey ? { idempotencyKey } : {}),
      };
      const { runId, created } = await api.post<{ runId: string; created: boolean }>(`/api/flows/${encodeURIComponent(flow)}/runs`, body);
      if (!created) {
        setExisting(runId);
        return;
      }
      onClose();
      navigate(`/runs/${runId}`);
    } catch (e) {
      setError(errorText(e, t));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal title={`${t("trigger.title")} ${flow}`} onClose={onClose}>
      <div className="modal-body">
        <JsonEditor label={t("trigger.payload")} value={payload} onChange={setPayload} focus />
        <label className="field">
          <span>{t("trigger.businessKey")}</span>
          <input name="businessKey" value={businessKey} onChange={(e) => setBusinessKey(e.target.value)} />
        </label>
        <label className="field">
          <span>{t("trigger.idempotencyKey")}</span>
          <input name="idempotencyKey" value={idempotencyKey} onChange={(e) => setIdempotencyKey(e.target.value)} />
        </label>
        {existing && (
          <div className="note" role="status">
            {t("trigger.existing")}{" "}
            <Link to={`/runs/${existing}`} className="note-link">
              {t("trigger.openExisting")}
            </Link>
          </div>
        )}
        {error && (
          <div className="error-note" role="alert">
            {error}
          </div>
        )}
      </div>
      <footer>
        <button type="button" onClick={onClose}>
          {t("cancel")}
        </button>
        <button type="button" className="primary" disabled={parsed.error !== null || busy} onClick={submit}>
          {t("trigger.submit")}
        </button>
      </footer>
    </Modal>
  );
}
