import journal from './meta/_journal.json';
import m0000 from './0000_init.sql';
import m0001 from './0001_traces.sql';
import m0002 from './0002_pod_trace_record.sql';

  export default {
    journal,
    migrations: {
      m0000,
m0001,
m0002
    }
  }
  