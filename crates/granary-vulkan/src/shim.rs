//! Temporary stand-in for granary_archive::DeviceIdentity until the archive v3 branch lands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceIdentity {
    pub vendor_id: u32,
    pub device_id: u32,
    pub driver_id: u32,
    pub driver_version: u32,
    pub api_version: u32,
    pub pipeline_cache_uuid: [u8; 16],
    pub binary_global_key: Vec<u8>,
    pub device_name: String,
    pub driver_name: String,
    pub driver_info: String,
}
impl DeviceIdentity {
    pub fn describe(&self) -> String {
        format!("{} {} {}", self.device_name, self.driver_name, self.driver_info)
    }
}
