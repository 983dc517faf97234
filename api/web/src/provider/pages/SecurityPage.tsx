import { useQuery } from '../../lib/hooks';
import { OwnSecurityPage } from '../../people/OwnSecurityPage';
import { OwnSecondFactorRequirement } from '../operations';

/**
 * The signed-in person's second factor (the page is the portal's Account → Security); it
 * stays on while the provider requires one of everyone.
 */
export function SecurityPage() {
  const { data } = useQuery(OwnSecondFactorRequirement, {});
  return (
    <OwnSecurityPage
      lead="How you sign in to this console: your password, and a second factor if you turn it on."
      keysPath="/keys"
      forgotten="Forgotten it? Anyone else of your provider can give you a link to set a new one (People → Reset password)."
      resetBy="someone else of your provider"
      required={data?.provider.secondFactorRequired ?? false}
      requiredNote="Your provider requires a second factor of everyone, so it stays on. Lost your phone? Sign in with a recovery code, or ask someone else of your provider to reset it (People → Reset second factor)."
    />
  );
}
