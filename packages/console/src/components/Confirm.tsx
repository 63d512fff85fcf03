import { useEffect, useRef } from "react";
import { Modal } from "./Status";

/**
 * A change that cannot be taken back (cancelling a run stops work for good; rerunning all repeats
 * every effect; a revoked token stops working at once), asked in the page with the safe choice
 * focused, so Enter does no harm.
 */
export function Confirm(props: { title: string; text: string; keep: string; act: string; onKeep: () => void; onAct: () => void }) {
  const keep = useRef<HTMLButtonElement>(null);
  // After the dialog's own showModal, which focuses its first button (the ×).
  useEffect(() => keep.current?.focus(), []);
  return (
    <Modal title={props.title} onClose={props.onKeep}>
      <div className="modal-body">
        <p className="confirm-text">{props.text}</p>
      </div>
      <footer>
        <button type="button" ref={keep} onClick={props.onKeep}>
          {props.keep}
        </button>
        <button type="button" className="danger" onClick={props.onAct}>
          {props.act}
        </button>
      </footer>
    </Modal>
  );
}
