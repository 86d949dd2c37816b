import Foundation
import Platform

// What an app must catch comes with `import MoodLedger`: the log's error, beside the model's `MoodError`.
@_exported import struct EventLog.EventLogError

extension EventLogError: LocalizedError {
    /// A sentence for an alert, about the user's data: never a path's contents or a record's bytes.
    public var errorDescription: String? {
        switch code {
        case .locked: return "The mood journal is being changed by another part of the app; try again in a moment."
        case .corrupted: return "The mood journal's file is damaged (\(description))."
        case .io where errno == .noSpace: return "The device is out of space: the change was not saved."
        case .io: return "The mood journal could not be read or written (\(description))."
        case .failedState: return "An earlier save to the mood journal failed, so it accepts no more changes for now."
        case .notFound: return "There is no mood journal at this location."
        case .notWritable: return "The mood journal is open for reading only, or closed."
        case .invalidArgument: return "The change is too large to save (\(message))."
        case .protectedDataUnavailable: return "The mood journal is protected while the device is locked."
        default: return "The mood journal refused the change (\(description))."
        }
    }

    /// What the user can do about it.
    public var recoverySuggestion: String? {
        switch code {
        case .io where errno == .noSpace: return "Free some space, then try again: nothing saved earlier was lost."
        case .corrupted: return "Repair the journal: what cannot be read is kept in a copy."
        case .failedState: return "Close the journal and open it again; nothing saved earlier was lost."
        case .protectedDataUnavailable: return "Unlock the device, then try again: nothing was changed."
        default: return nil
        }
    }
}
