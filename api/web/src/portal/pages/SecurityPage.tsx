import { OwnSecurityPage } from '../../people/OwnSecurityPage';
import { AccountNav } from '../AccountNav';

/** Account → Security: the signed-in person's second factor (the page is shared with the provider console). */
export function SecurityPage() {
  return (
    <OwnSecurityPage
      lead="How you sign in to this portal: your password, and a second factor if you turn it on."
      nav={<AccountNav />}
      keysPath="/account/keys"
      forgotten="Forgotten it? An admin of your organisation can give you a link to set a new one (People → Reset password)."
    />
  );
}
