// The log's byte format is part of the log's API: `import EventLog` brings its constants and record types.
@_exported import EventLogFormat
