import type { Role } from '../gql/schema';
import { type ApiError, isFieldError } from '../lib/api';
import { roleAbout } from './roles';

interface RoleChoiceProps {
  legend: string;
  roles: readonly Role[];
  value: Role;
  onChange: (role: Role) => void;
  error: ApiError | null;
}

/** One role of those the viewer may grant, each with what it may do. */
export function RoleChoice({ legend, roles, value, onChange, error }: RoleChoiceProps) {
  const problem = isFieldError(error, 'role') ? error?.message : null;
  return (
    <fieldset class="field radio-group">
      <legend>{legend}</legend>
      {roles.map((role) => (
        <label class="radio" key={role}>
          <input type="radio" name="role" value={role} checked={value === role} onChange={() => onChange(role)} />
          <span>{roleAbout(role)}</span>
        </label>
      ))}
      {problem && <p class="field-error">{problem}</p>}
    </fieldset>
  );
}
