import { useMutation } from '../lib/hooks';
import { shortId } from '../lib/ids';
import { Button } from '../ui/Button';
import { ConfirmButton } from '../ui/ConfirmButton';
import { ErrorNotice } from '../ui/Notice';
import { DeleteWebhookEndpoint, RotateWebhookSecret, SendTestWebhook, UpdateWebhookEndpoint, type WebhookEndpointRowFragment } from './operations';

/** What an action tells the page: reload the list, show a new secret once, or a note. */
export interface EndpointHandlers {
  reload: () => void;
  withSecret: (url: string, secret: string) => void;
  setNote: (note: string) => void;
}

/** Send a test event, rotate the secret, enable or disable, delete. */
export function WebhookActions({ endpoint, handlers }: { endpoint: WebhookEndpointRowFragment; handlers: EndpointHandlers }) {
  const id = endpoint.id;
  const test = useMutation(SendTestWebhook);
  const rotate = useMutation(RotateWebhookSecret);
  const update = useMutation(UpdateWebhookEndpoint);
  const remove = useMutation(DeleteWebhookEndpoint);
  const onTest = async () => {
    const r = await test.run({ id });
    if (r) handlers.setNote(`Test event ${shortId(r.sendTestWebhook)} sent to ${endpoint.url}.`);
  };
  const onRotate = async () => {
    const r = await rotate.run({ id });
    if (r?.rotateWebhookSecret.secret) handlers.withSecret(endpoint.url, r.rotateWebhookSecret.secret);
  };
  const onToggle = async () => {
    if (await update.run({ id, input: { enabled: !endpoint.enabled } })) handlers.reload();
  };
  const onDelete = async () => {
    const ok = (await remove.run({ id })) !== null;
    if (ok) handlers.reload();
    return ok;
  };
  const what = `endpoint ${endpoint.url}`;
  return (
    <div class="inline-actions">
      <Button small pending={test.pending} disabled={!endpoint.enabled} onClick={onTest} aria-label={`Send test to ${endpoint.url}`}>
        Send test
      </Button>
      <Button small pending={rotate.pending} onClick={onRotate} aria-label={`Rotate secret of ${what}`}>
        Rotate secret
      </Button>
      <Button small pending={update.pending} onClick={onToggle} aria-label={`${endpoint.enabled ? 'Disable' : 'Enable'} ${what}`}>
        {endpoint.enabled ? 'Disable' : 'Enable'}
      </Button>
      <ConfirmButton label="Delete" confirmLabel="Confirm delete" what={what} pending={remove.pending} error={remove.error} onConfirm={onDelete} />
      <ErrorNotice error={test.error ?? rotate.error ?? update.error} />
    </div>
  );
}
