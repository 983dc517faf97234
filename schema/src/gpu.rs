//! The GPU model catalog: what the platform knows about each model it can sell.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A GPU model the platform can sell. The code (`H100`, `A100-80GB`, …) is what the
/// catalog, the API and `registerNode` use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum GpuModel {
    #[serde(rename = "H100")]
    H100,
    #[serde(rename = "H200")]
    H200,
    #[serde(rename = "A100-80GB")]
    A100_80,
    #[serde(rename = "A100-40GB")]
    A100_40,
    #[serde(rename = "B200")]
    B200,
    #[serde(rename = "GB200")]
    GB200,
    #[serde(rename = "L40S")]
    L40S,
}

/// What the scheduler, the agent and the catalog need to know about a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuModelSpec {
    pub model: GpuModel,
    /// The catalog code.
    pub code: &'static str,
    /// The marketing name NVML reports starts with this (used by agents to check inventory).
    pub nvml_name_prefix: &'static str,
    /// Framebuffer in GB as NVIDIA names it (80 for an H100 80GB); MIG names derive from it.
    pub memory_gb: u32,
    /// Framebuffer in MiB as sold (memory_gb × 1024).
    pub memory_mib: u64,
    pub mig_capable: bool,
    /// Board power limit, used to bound power readings.
    pub max_power_w: u32,
    /// NVLink links per GPU (0: PCIe only); all of them are active on a healthy board.
    pub nvlinks: u32,
}

impl GpuModel {
    pub const ALL: [GpuModel; 7] = [
        GpuModel::H100,
        GpuModel::H200,
        GpuModel::A100_80,
        GpuModel::A100_40,
        GpuModel::B200,
        GpuModel::GB200,
        GpuModel::L40S,
    ];

    pub fn spec(self) -> GpuModelSpec {
        let (code, nvml_name_prefix, memory_gb, mig_capable, max_power_w, nvlinks) = match self {
            GpuModel::H100 => ("H100", "NVIDIA H100", 80, true, 700, 18),
            GpuModel::H200 => ("H200", "NVIDIA H200", 141, true, 700, 18),
            GpuModel::A100_80 => ("A100-80GB", "NVIDIA A100", 80, true, 400, 12),
            GpuModel::A100_40 => ("A100-40GB", "NVIDIA A100", 40, true, 400, 12),
            GpuModel::B200 => ("B200", "NVIDIA B200", 180, true, 1000, 18),
            GpuModel::GB200 => ("GB200", "NVIDIA GB200", 186, true, 1200, 18),
            GpuModel::L40S => ("L40S", "NVIDIA L40S", 48, false, 350, 0),
        };
        GpuModelSpec {
            model: self,
            code,
            nvml_name_prefix,
            memory_gb,
            memory_mib: u64::from(memory_gb) * 1024,
            mig_capable,
            max_power_w,
            nvlinks,
        }
    }

    pub fn code(self) -> &'static str {
        self.spec().code
    }

    pub fn memory_mib(self) -> u64 {
        self.spec().memory_mib
    }

    pub fn mig_capable(self) -> bool {
        self.spec().mig_capable
    }
}

impl fmt::Display for GpuModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown GPU model `{0}` (known: H100, H200, A100-80GB, A100-40GB, B200, GB200, L40S)")]
pub struct UnknownGpuModel(pub String);

impl FromStr for GpuModel {
    type Err = UnknownGpuModel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GpuModel::ALL
            .into_iter()
            .find(|m| m.code().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownGpuModel(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_parses_from_its_code_in_any_case() {
        for model in GpuModel::ALL {
            assert_eq!(model.code().parse::<GpuModel>().expect("parses"), model);
            assert_eq!(
                model
                    .code()
                    .to_lowercase()
                    .parse::<GpuModel>()
                    .expect("parses"),
                model
            );
        }
        assert!("V100".parse::<GpuModel>().is_err());
    }

    #[test]
    fn the_serde_name_is_the_catalog_code() {
        for model in GpuModel::ALL {
            let json = serde_json::to_string(&model).expect("serializes");
            assert_eq!(json, format!("\"{}\"", model.code()));
        }
    }

    #[test]
    fn only_data_centre_models_are_mig_capable() {
        assert!(GpuModel::H100.mig_capable());
        assert!(!GpuModel::L40S.mig_capable());
        assert_eq!(GpuModel::H100.memory_mib(), 80 * 1024);
    }
}
