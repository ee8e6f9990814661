// @ts-check
/** The confirmation asked before a drain: optional deadline and reason, Cancel or Escape to keep things as they are. */
import { $ } from './dom.js';

const dialog = {
  el: /** @type {HTMLDialogElement} */ ($('#confirm-dialog')),
  form: /** @type {HTMLFormElement} */ ($('#confirm-form')),
  title: $('#confirm-title'),
  text: $('#confirm-text'),
  deadline: /** @type {HTMLInputElement} */ ($('#confirm-deadline')),
  reason: /** @type {HTMLInputElement} */ ($('#confirm-reason')),
  error: $('#confirm-error'),
  ok: /** @type {HTMLButtonElement} */ ($('#confirm-ok')),
  cancel: /** @type {HTMLButtonElement} */ ($('#confirm-cancel')),
};

/**
 * Asks before an action that takes capacity away. Resolves with the optional deadline and reason,
 * or null when cancelled (Cancel, Escape).
 * @param {{ title: string, text: string, ok: string }} what
 * @returns {Promise<{ deadlineSecs?: number, reason?: string } | null>}
 */
export function confirmDrain(what) {
  dialog.title.textContent = what.title;
  dialog.text.textContent = what.text;
  dialog.ok.textContent = what.ok;
  dialog.deadline.value = '';
  dialog.reason.value = '';
  dialog.error.textContent = '';
  dialog.deadline.setAttribute('aria-invalid', 'false');
  dialog.el.returnValue = '';
  return new Promise((resolve) => {
    /** @param {SubmitEvent} event */
    const onSubmit = (event) => {
      event.preventDefault();
      const raw = dialog.deadline.value.trim();
      const secs = raw === '' ? undefined : Number(raw);
      if (secs !== undefined && !(Number.isInteger(secs) && secs >= 1 && secs <= 86_400)) {
        dialog.error.textContent = 'The deadline is a whole number of seconds, from 1 to 86400, or empty.';
        dialog.deadline.setAttribute('aria-invalid', 'true');
        dialog.deadline.focus();
        return;
      }
      dialog.el.close('ok');
    };
    const onCancel = () => dialog.el.close('cancel');
    const onClose = () => {
      dialog.form.removeEventListener('submit', onSubmit);
      dialog.cancel.removeEventListener('click', onCancel);
      if (dialog.el.returnValue !== 'ok') return resolve(null);
      const raw = dialog.deadline.value.trim();
      const reason = dialog.reason.value.trim();
      resolve({ deadlineSecs: raw === '' ? undefined : Number(raw), reason: reason || undefined });
    };
    dialog.form.addEventListener('submit', onSubmit);
    dialog.cancel.addEventListener('click', onCancel);
    dialog.el.addEventListener('close', onClose, { once: true });
    dialog.el.showModal();
    dialog.cancel.focus();
  });
}
