/// Joules as a battery sees them: mAh, mAh per hour, % of the battery per hour.
public enum BatteryUnits {
    /// mAh from joules at `voltage` (1 mAh = voltage × 3.6 J; 13.86 J at 3.85 V).
    public static func milliampHours(joules: Double, voltage: Double = 3.85) -> Double { joules / (voltage * 3.6) }

    /// mAh per hour for `joules` spent over `seconds`.
    public static func milliampHoursPerHour(joules: Double, seconds: Double, voltage: Double = 3.85) -> Double {
        seconds > 0 ? milliampHours(joules: joules, voltage: voltage) * 3600 / seconds : 0
    }

    /// % of a `capacity` mAh battery per hour.
    public static func percentPerHour(joules: Double, seconds: Double, capacity: Double = 3000, voltage: Double = 3.85) -> Double {
        capacity > 0 ? milliampHoursPerHour(joules: joules, seconds: seconds, voltage: voltage) / capacity * 100 : 0
    }

    /// Average milliwatts.
    public static func milliwatts(joules: Double, seconds: Double) -> Double { seconds > 0 ? joules / seconds * 1000 : 0 }
}
