import { useState } from 'preact/hooks';
import type { AllocationClass, PlaceOrderInput, TopologyLevel } from '../../gql/schema';
import { compare, isDecimal, multiply } from '../../lib/decimal';
import { money } from '../../lib/format';
import { useMutation } from '../../lib/hooks';
import { newIdempotencyKey } from '../../lib/ids';
import { navigate } from '../../lib/router';
import { Button } from '../../ui/Button';
import { Check } from '../../ui/Check';
import { Field, unclaimed } from '../../ui/Field';
import { setFlash } from '../../ui/Flash';
import { ErrorNotice, Notice } from '../../ui/Notice';
import { canChange, useViewer } from '../../ui/viewer';
import { type Alternative, type Asked, describeAlternative, parseAlternatives } from '../alternatives';
import { type Sku, unitPrice } from '../catalog';
import { parseLabels } from '../labels';
import { PlaceOrder } from '../operations';

interface OrderFormProps {
  skus: Sku[];
  selected: string | null;
  onSelect: (id: string) => void;
}

interface Draft {
  count: string;
  cls: AllocationClass;
  level: TopologyLevel | '';
  required: boolean;
  exclusive: boolean;
  maxPrice: string;
  labels: string;
}

const EMPTY: Draft = { count: '1', cls: 'ON_DEMAND', level: '', required: true, exclusive: false, maxPrice: '', labels: '' };

const LEVELS: [TopologyLevel | '', string][] = [
  ['', 'No preference'],
  ['NODE', 'Same node'],
  ['NVLINK_DOMAIN', 'Same NVLink domain'],
  ['RACK', 'Same rack'],
  ['ANY', 'Anywhere in the region'],
];

/** The inputs that show their own server errors. */
const FIELDS = ['sku', 'count', 'topology', 'maxPricePerHour', 'labels'];

type Problems = Partial<Record<'count' | 'maxPricePerHour' | 'labels' | 'sku', string>>;

/** The order form: SKU, count, class, placement, price cap and labels, with the hourly cost. */
export function OrderForm({ skus, selected, onSelect }: OrderFormProps) {
  const viewer = useViewer();
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const [problems, setProblems] = useState<Problems>({});
  const [idempotencyKey, setIdempotencyKey] = useState(newIdempotencyKey);
  // What the last order asked (the alternatives keep its class and placement).
  const [asked, setAsked] = useState<Asked | null>(null);
  const place = useMutation(PlaceOrder);
  const sku = skus.find((s) => s.id === selected) ?? null;
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  const blocked = blockedReason(viewer);

  const submit = async (e: Event) => {
    e.preventDefault();
    const checked = check(draft, sku);
    setProblems(checked.problems);
    if (!checked.input) return;
    setAsked({ cls: draft.cls, level: draft.level, required: draft.required, exclusive: draft.exclusive });
    const result = await place.run({ input: { ...checked.input, idempotencyKey } });
    if (!result) return setIdempotencyKey(newIdempotencyKey());
    const order = result.placeOrder.order;
    setFlash(`Order placed: ${order.count} × ${sku?.name ?? 'units'} at ${money(order.pricePerHour, sku?.currency ?? '')} an hour.`);
    // One allocation (the usual case): straight to it; several: the list.
    const [only, ...more] = order.allocations;
    navigate(only && more.length === 0 ? `/allocations/${only.id}` : '/allocations');
  };

  const applyAlternative = (alt: Alternative) => {
    onSelect(alt.sku);
    setDraft((d) => ({ ...d, count: String(alt.count), ...(asked ?? {}) }));
    setProblems({});
    place.reset();
    document.getElementById('order-submit')?.focus();
  };

  return (
    <form id="order-form" class="card form" onSubmit={submit} noValidate aria-describedby={blocked ? 'order-blocked' : undefined}>
      {blocked && (
        <div id="order-blocked">
          <Notice tone="warning">{blocked}</Notice>
        </div>
      )}
      <fieldset disabled={blocked !== null} class="plain">
        <Field label="SKU" id="order-sku" name="sku" error={place.error} message={problems.sku}>
          {(p) => (
            <select {...p} value={selected ?? ''} onChange={(e) => onSelect(e.currentTarget.value)}>
              <option value="">Choose a SKU…</option>
              {skus.map((s) => (
                <option key={s.id} value={s.id} disabled={s.available === 0}>
                  {`${s.name} (${s.region}) — ${s.available} available`}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Count" name="count" error={place.error} message={problems.count} hint={sku ? `Units of ${sku.unit}; ${sku.available} available now.` : undefined}>
          {(p) => <input {...p} type="number" inputMode="numeric" min={1} max={sku?.available} step={1} value={draft.count} onInput={(e) => set('count', e.currentTarget.value)} />}
        </Field>
        <ClassChoice sku={sku} value={draft.cls} onChange={(v) => set('cls', v)} />
        <Field label="Placement" name="topology" error={place.error} hint="Keep the units close together for fast interconnect.">
          {(p) => (
            <select {...p} value={draft.level} onChange={(e) => set('level', e.currentTarget.value as TopologyLevel | '')}>
              {LEVELS.map(([v, label]) => (
                <option key={v} value={v}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
        {draft.level !== '' && (
          <Check label="Fail rather than spread wider" checked={draft.required} onChange={(v) => set('required', v)} />
        )}
        <Check label="Exclusive: no other tenant on the same node" checked={draft.exclusive} onChange={(v) => set('exclusive', v)} />
        <Field label="Maximum price per hour (optional)" name="maxPricePerHour" error={place.error} message={problems.maxPricePerHour} hint="The order is refused if it would cost more an hour.">
          {(p) => <input {...p} type="text" inputMode="decimal" autocomplete="off" placeholder="e.g. 25.00" value={draft.maxPrice} onInput={(e) => set('maxPrice', e.currentTarget.value)} />}
        </Field>
        <Field label="Labels (optional)" name="labels" error={place.error} message={problems.labels} hint="key=value, one a line or separated by commas.">
          {(p) => <textarea {...p} rows={2} placeholder="team=research" value={draft.labels} onInput={(e) => set('labels', e.currentTarget.value)} />}
        </Field>
        <CostSummary sku={sku} draft={draft} />
        <ErrorNotice error={unclaimed(place.error, FIELDS)} />
        {place.error?.code === 'INSUFFICIENT_CAPACITY' && asked && (
          <Alternatives alternatives={parseAlternatives(place.error.extensions.alternatives)} asked={asked} skus={skus} onUse={applyAlternative} />
        )}
        <Button id="order-submit" type="submit" variant="primary" pending={place.pending} class="btn-block">
          Place order
        </Button>
      </fieldset>
    </form>
  );
}

/** "Would fit now:": the orders the API says would be placed instead, each one click from the form. */
function Alternatives({ alternatives, asked, skus, onUse }: { alternatives: Alternative[]; asked: Asked; skus: Sku[]; onUse: (alt: Alternative) => void }) {
  if (alternatives.length === 0) return <p class="muted alternatives">Nothing similar would fit now either: try again later, or with fewer units.</p>;
  return (
    <div class="alternatives" role="group" aria-labelledby="alternatives-title">
      <p class="alternatives-title" id="alternatives-title">
        Would fit now:
      </p>
      <ul class="alternative-list">
        {alternatives.map((alt) => {
          const sku = skus.find((s) => s.id === alt.sku);
          const sentence = describeAlternative(alt, asked);
          return (
            <li key={`${alt.sku}-${alt.count}`}>
              <span>
                {sentence}
                {sku && <span class="muted block">{`${money(multiply(unitPrice(sku, asked.cls), alt.count), sku.currency)} / hour`}</span>}
              </span>
              <Button small disabled={!sku} onClick={() => onUse(alt)} aria-label={`Use this: ${sentence}`}>
                Use this
              </Button>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function blockedReason(viewer: ReturnType<typeof useViewer>): string | null {
  if (!canChange(viewer)) return 'Your key can only read (billing role). Ask an admin or member of your team to place orders.';
  if (viewer.tenant?.status === 'SUSPENDED') return 'New orders are paused while your account is suspended.';
  return null;
}

function ClassChoice({ sku, value, onChange }: { sku: Sku | null; value: AllocationClass; onChange: (v: AllocationClass) => void }) {
  const options: [AllocationClass, string, string][] = [
    ['ON_DEMAND', 'On demand', 'Runs until you release it.'],
    ['SPOT', 'Spot', 'Cheaper; can be preempted with notice.'],
  ];
  return (
    <fieldset class="field radio-group">
      <legend>Class</legend>
      {options.map(([cls, label, note]) => (
        <label class="radio" key={cls}>
          <input type="radio" name="class" value={cls} checked={value === cls} onChange={() => onChange(cls)} />
          <span>
            <strong>{label}</strong>
            {sku && <span class="price"> {money(unitPrice(sku, cls), sku.currency)} / unit-hour</span>}
            <span class="muted block">{note}</span>
          </span>
        </label>
      ))}
    </fieldset>
  );
}

/** count × unit price, exactly, before ordering; warns when over the price cap. */
function CostSummary({ sku, draft }: { sku: Sku | null; draft: Draft }) {
  const count = Number(draft.count);
  const valid = sku !== null && Number.isInteger(count) && count > 0;
  const price = sku ? unitPrice(sku, draft.cls) : '0';
  const total = valid ? multiply(price, count) : null;
  const over = total !== null && isDecimal(draft.maxPrice) && compare(total, draft.maxPrice) > 0;
  return (
    <div class="cost" aria-live="polite">
      <p class="cost-label">Hourly cost</p>
      {total !== null && sku ? (
        <>
          <p class="cost-value">{money(total, sku.currency)} / hour</p>
          <p class="muted">
            {count} × {money(price, sku.currency)} per {sku.unit}
          </p>
        </>
      ) : (
        <p class="muted">Choose a SKU and a count to see the price.</p>
      )}
      {over && <p class="field-error">This is more than your maximum price per hour: the order would be refused.</p>}
    </div>
  );
}

/** The form's own checks; the input to send when they pass. */
function check(draft: Draft, sku: Sku | null): { problems: Problems; input: PlaceOrderInput | null } {
  const problems: Problems = {};
  const count = Number(draft.count);
  if (!sku) problems.sku = 'Choose a SKU.';
  if (!Number.isInteger(count) || count < 1) problems.count = 'Enter a whole number of at least 1.';
  else if (sku && count > sku.available) problems.count = `Only ${sku.available} available right now.`;
  const maxPrice = draft.maxPrice.trim();
  if (maxPrice !== '' && !isDecimal(maxPrice)) problems.maxPricePerHour = 'Enter an amount such as 25.00.';
  const labels = parseLabels(draft.labels);
  if (labels.error) problems.labels = labels.error;
  if (Object.keys(problems).length > 0 || !sku) return { problems, input: null };
  return {
    problems,
    input: {
      sku: sku.id,
      count,
      class: draft.cls,
      exclusive: draft.exclusive,
      labels: labels.labels,
      ...(maxPrice !== '' ? { maxPricePerHour: maxPrice } : {}),
      ...(draft.level !== '' ? { topology: { level: draft.level, required: draft.required } } : {}),
    },
  };
}
