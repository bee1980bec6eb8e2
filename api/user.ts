// Who a request is: what authentication decides and authorization, admission and audit read.
export interface UserInfo {
  name: string;
  uid: string;
  groups: string[];
  extra?: Record<string, string[]>;
}
